package scheduler

import (
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// specFields walks t, a PodSpec's type, and returns the paths of its fields
// that are to be listed (leaves, and fields not in expanded) and the
// expanded paths it went into.
func specFields(t reflect.Type, prefix string, expanded map[string]bool, leaves, into map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" && f.Anonymous { // an inlined struct, such as VolumeSource
			specFields(f.Type, prefix, expanded, leaves, into)
			continue
		}
		path := prefix + name
		if !expanded[path] {
			leaves[path] = true
			continue
		}
		into[path] = true
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice {
			path += "[]"
			ft = ft.Elem()
		}
		if ft.Kind() != reflect.Struct {
			leaves[strings.TrimSuffix(path, "[]")] = true // nothing to walk into
			continue
		}
		specFields(ft, path+".", expanded, leaves, into)
	}
}

// TestPodSpecFieldsAreListed fails when a field of corev1.PodSpec (walked
// into affinity, containers, volumes and spread constraints) is neither
// handled, nor refused as unsupported, nor ignored with a reason; when a
// field is in two lists; and when a list names a field that does not exist.
// A new Kubernetes release that adds a field makes it fail until the field
// is decided on.
func TestPodSpecFieldsAreListed(t *testing.T) {
	leaves, into := map[string]bool{}, map[string]bool{}
	specFields(reflect.TypeOf(corev1.PodSpec{}), "", expandedFields, leaves, into)
	lists := map[string]map[string]string{"handledFields": handledFields, "unsupportedFields": unsupportedFields, "ignoredFields": ignoredFields}
	var missing []string
	for path := range leaves {
		var in []string
		for name, list := range lists {
			if _, ok := list[path]; ok {
				in = append(in, name)
			}
		}
		sort.Strings(in)
		switch len(in) {
		case 0:
			missing = append(missing, path)
		case 1:
		default:
			t.Errorf("PodSpec field %s is in %s: it must be in one list", path, strings.Join(in, " and "))
		}
	}
	sort.Strings(missing)
	for _, path := range missing {
		t.Errorf("PodSpec field %s is in none of handledFields, unsupportedFields and ignoredFields (podspec.go): decide what Phalanx does with it", path)
	}
	for name, list := range lists {
		for path, text := range list {
			if !leaves[path] {
				t.Errorf("%s names %s, which is not a field of PodSpec to list (a typo, a removed field, or an expanded one)", name, path)
			}
			if strings.TrimSpace(text) == "" {
				t.Errorf("%s: %s says nothing", name, path)
			}
		}
	}
	for path := range expandedFields {
		if !into[path] {
			t.Errorf("expandedFields names %s, which the walk never reached", path)
		}
	}
}

// TestConstraintsDocListsEveryField: docs/constraints.md names every field
// of the three lists, so that what users read is what the scheduler does.
func TestConstraintsDocListsEveryField(t *testing.T) {
	doc, err := os.ReadFile("../docs/constraints.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, list := range map[string]map[string]string{"handledFields": handledFields, "unsupportedFields": unsupportedFields, "ignoredFields": ignoredFields} {
		for path := range list {
			shown := strings.Replace(path, "containers[].", "(init)containers[].", 1)
			if strings.HasPrefix(path, "initContainers[].") {
				shown = strings.Replace(path, "initContainers[].", "(init)containers[].", 1)
			}
			if !strings.Contains(string(doc), "`"+path+"`") && !strings.Contains(string(doc), "`"+shown+"`") {
				t.Errorf("docs/constraints.md does not name %s (of %s)", path, name)
			}
		}
	}
}
