package workload

// Helpers that read a yaml.Node tree strictly: every value is checked for
// its kind, every mapping for unknown and duplicate keys, and every error
// names the file and the line of the offending node.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxAliases bounds alias expansions per file, so that nested aliases
// ("billion laughs") cannot make the reader walk an exponential tree.
const maxAliases = 1000

// yamlReader walks one scenario file.
type yamlReader struct {
	file    string
	aliases int
}

// errorf returns "file:line: problem" for node n.
func (p *yamlReader) errorf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.file, max(n.Line, 1), fmt.Sprintf(format, args...))
}

var (
	yamlLine     = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	yamlTypeLine = regexp.MustCompile(`^line (\d+): (.*)$`)
)

// parse decodes the single YAML document of r into a node tree. Syntax
// errors of the yaml package are rewritten as "file:line: problem"; an
// error without a line is on the first line.
func (p *yamlReader) parse(r io.Reader) (root *yaml.Node, err error) {
	defer func() {
		if v := recover(); v != nil { // the yaml package must not take us down
			root, err = nil, fmt.Errorf("%s:1: malformed YAML: %v", p.file, v)
		}
	}()
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("workload: %s: %w", p.file, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%s:1: empty scenario", p.file)
		}
		return nil, p.syntaxError(err, src)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, p.errorf(&extra, "a scenario is one YAML document, found a second one")
	} else if err != io.EOF {
		return nil, p.syntaxError(err, src)
	}
	root = &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	if isNull(root) {
		return nil, p.errorf(root, "empty scenario")
	}
	return root, nil
}

// yamlParserProblems are the problems the yaml package reports with a
// 0-based line (its scanner's problems come with 1-based lines).
var yamlParserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"found undefined tag handle",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
}

var yamlUnknownAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

// syntaxError rewrites an error of the yaml package as "file:line: problem".
func (p *yamlReader) syntaxError(err error, src []byte) error {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if slices.Contains(yamlParserProblems, m[2]) {
			line++
		}
		return fmt.Errorf("%s:%d: %s", p.file, line, m[2])
	}
	if m := yamlUnknownAnchor.FindStringSubmatch(msg); m != nil {
		// The yaml package gives no line: find the first use of the alias.
		line := 1
		if i := bytes.Index(src, []byte("*"+m[1])); i >= 0 {
			line += bytes.Count(src[:i], []byte("\n"))
		}
		return fmt.Errorf("%s:%d: alias *%s names no anchor defined before it", p.file, line, m[1])
	}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
		if m := yamlTypeLine.FindStringSubmatch(msg); m != nil {
			return fmt.Errorf("%s:%s: %s", p.file, m[1], m[2])
		}
	}
	return fmt.Errorf("%s:1: %s", p.file, strings.TrimPrefix(msg, "yaml: "))
}

// resolve follows aliases, within the file's budget.
func (p *yamlReader) resolve(n *yaml.Node) (*yaml.Node, error) {
	for n.Kind == yaml.AliasNode {
		p.aliases++
		if p.aliases > maxAliases || n.Alias == nil {
			return nil, p.errorf(n, "too many alias expansions (at most %d)", maxAliases)
		}
		n = n.Alias
	}
	return n, nil
}

// isNull reports whether n is an explicit or implicit YAML null.
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// mapping checks that n is a mapping whose keys are all among known and
// distinct, and returns the values by key. Null values count as absent.
func (p *yamlReader) mapping(n *yaml.Node, what string, known ...string) (map[string]*yaml.Node, error) {
	n, err := p.resolve(n)
	if err != nil {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, "%s must be a mapping, got %s", what, describe(n))
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	lines := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := p.resolve(n.Content[i])
		if err != nil {
			return nil, err
		}
		if k.Kind != yaml.ScalarNode {
			return nil, p.errorf(k, "keys of %s must be strings, got %s", what, describe(k))
		}
		key := k.Value
		if key == "<<" && k.ShortTag() == "!!merge" {
			return nil, p.errorf(k, "merge keys (<<) are not supported")
		}
		if first, dup := lines[key]; dup {
			return nil, p.errorf(k, "duplicate field %q in %s (first on line %d)", key, what, first)
		}
		lines[key] = k.Line
		if !slices.Contains(known, key) {
			return nil, p.errorf(k, "unknown field %q in %s%s", key, what, suggest(key, known))
		}
		v, err := p.resolve(n.Content[i+1])
		if err != nil {
			return nil, err
		}
		if !isNull(v) {
			out[key] = v
		}
	}
	return out, nil
}

// stringMap reads a mapping of strings to strings (labels, node selectors).
func (p *yamlReader) stringMap(n *yaml.Node, what string) (map[string]string, error) {
	n, err := p.resolve(n)
	if err != nil {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, "%s must be a mapping, got %s", what, describe(n))
	}
	out := make(map[string]string, len(n.Content)/2)
	lines := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, err := p.scalarNode(n.Content[i], "key of "+what)
		if err != nil {
			return nil, err
		}
		if k.Value == "" {
			return nil, p.errorf(k, "empty key in %s", what)
		}
		if first, dup := lines[k.Value]; dup {
			return nil, p.errorf(k, "duplicate key %q in %s (first on line %d)", k.Value, what, first)
		}
		lines[k.Value] = k.Line
		v, err := p.str(n.Content[i+1], what+" "+k.Value)
		if err != nil {
			return nil, err
		}
		out[k.Value] = v
	}
	return out, nil
}

// sequence checks that n is a sequence and returns its resolved items.
func (p *yamlReader) sequence(n *yaml.Node, what string) ([]*yaml.Node, error) {
	n, err := p.resolve(n)
	if err != nil {
		return nil, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n, "%s must be a list, got %s", what, describe(n))
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	for _, c := range n.Content {
		c, err := p.resolve(c)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (p *yamlReader) scalarNode(n *yaml.Node, what string) (*yaml.Node, error) {
	n, err := p.resolve(n)
	if err != nil {
		return nil, err
	}
	if n.Kind != yaml.ScalarNode {
		return nil, p.errorf(n, "%s must be a scalar, got %s", what, describe(n))
	}
	return n, nil
}

// str reads a scalar as a string; null reads as "".
func (p *yamlReader) str(n *yaml.Node, what string) (string, error) {
	n, err := p.scalarNode(n, what)
	if err != nil || isNull(n) {
		return "", err
	}
	return n.Value, nil
}

// integer reads an integer scalar in [lo, hi].
func (p *yamlReader) integer(n *yaml.Node, what string, lo, hi int64) (int64, error) {
	n, err := p.scalarNode(n, what)
	if err != nil {
		return 0, err
	}
	var v int64
	// An integer past 64 bits is read as a float: say it is out of range.
	digits := strings.TrimLeft(n.Value, "+-")
	long := n.ShortTag() == "!!float" && digits != "" && strings.Trim(digits, "0123456789") == ""
	if long {
		return 0, p.errorf(n, "%s must be between %d and %d, got %s", what, lo, hi, n.Value)
	}
	if n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		return 0, p.errorf(n, "%s must be an integer, got %q", what, n.Value)
	}
	if v < lo || v > hi {
		return 0, p.errorf(n, "%s must be between %d and %d, got %d", what, lo, hi, v)
	}
	return v, nil
}

// seconds reads a Go duration ("90s") or integer seconds.
func (p *yamlReader) seconds(n *yaml.Node, what string) (int64, error) {
	n, err := p.scalarNode(n, what)
	if err != nil {
		return 0, err
	}
	tag := n.ShortTag()
	value := n.Value
	if tag == "!!int" {
		var v int64
		if n.Decode(&v) != nil {
			return 0, p.errorf(n, "%s %q is not an integer number of seconds", what, n.Value)
		}
		value = strconv.FormatInt(v, 10)
	} else if tag != "!!str" {
		return 0, p.errorf(n, "%s must be a duration such as 90s, 10m, 2h or integer seconds, got %q", what, n.Value)
	}
	v, err := parseSeconds(value, tag == "!!int")
	if err != nil {
		return 0, p.errorf(n, "%s %v", what, err)
	}
	return v, nil
}

// describe names the kind of a node for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "nothing"
		}
		v := n.Value
		if len(v) > 60 || strings.Contains(v, "\n") {
			// A whole file read as one scalar (a CSV trace given as a
			// scenario, say): its start is enough to recognise it.
			line, _, _ := strings.Cut(v, "\n")
			if len(line) > 60 {
				line = strings.ToValidUTF8(line[:60], "")
			}
			return strconv.Quote(line) + fmt.Sprintf(" and %d more bytes", len(v)-len(line))
		}
		return strconv.Quote(v)
	}
	return "a YAML document"
}

// suggest names the known field a misspelt key probably meant, or lists them.
func suggest(key string, known []string) string {
	for _, k := range known {
		if strings.EqualFold(k, key) || strings.EqualFold(strings.ReplaceAll(key, "_", ""), k) {
			return fmt.Sprintf(" (did you mean %q?)", k)
		}
	}
	return "; known fields: " + strings.Join(known, ", ")
}

// boolean reads a YAML boolean (true or false).
func (p *yamlReader) boolean(n *yaml.Node, what string) (bool, error) {
	n, err := p.scalarNode(n, what)
	if err != nil {
		return false, err
	}
	var v bool
	if n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		return false, p.errorf(n, "%s must be true or false, got %q", what, n.Value)
	}
	return v, nil
}
