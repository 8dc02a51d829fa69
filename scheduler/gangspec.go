package scheduler

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
	"github.com/phalanx-sched/phalanx/core"
	"k8s.io/apimachinery/pkg/util/validation"
)

// What a gang asks of placement beyond its members' own specs: how long it
// runs (for reservations and backfill), a topology domain it must fit in,
// and a GPU model.
//
// A Phalanx PodGroup says it in its spec. Gangs without one (ACK's label
// gangs, gangs of one) and the PodGroups of kube-batch or Volcano say it with
// annotations, on the PodGroup or on the members. The first source that has
// a value wins: the PodGroup's field, the PodGroup's annotation, the members'
// annotation (members that carry it must agree). The estimate then falls back
// to the smallest activeDeadlineSeconds of the members, then to the run times
// of the queue's recent gangs (history.go). A value that cannot be read makes
// the gang invalid, with a message that names it; it never stops the
// scheduler.

// Annotations a gang's PodGroup or members may carry.
const (
	// AnnotationEstimatedRuntime is the gang's estimated run time: a Go
	// duration ("90m") or a number of seconds ("5400").
	AnnotationEstimatedRuntime = "phalanx.dev/estimated-runtime"
	// AnnotationRequiredTopology is a node label key, one of the
	// scheduler's topology levels: the gang's minimum must fit within one
	// domain of it.
	AnnotationRequiredTopology = "phalanx.dev/required-topology"
	// AnnotationGPUModel is the value the members' nodes must have in the
	// scheduler's GPU-model label.
	AnnotationGPUModel = "phalanx.dev/gpu-model"
)

// DefaultGPUModelLabel is the node label that names the GPU model, as
// NVIDIA's GPU feature discovery writes it.
const DefaultGPUModelLabel = "nvidia.com/gpu.product"

// maxEstimate bounds estimates, in seconds (100 years, as the CRD does), so
// that adding one to a time never overflows.
const maxEstimate = 100 * 365 * 24 * 3600

// ParseEstimate reads an estimated run time: a Go duration such as "90m" or
// "1h30m", or a whole number of seconds such as "5400". Fractions of a
// second round up. It returns whole seconds, at least 1 and at most 100
// years, or an error that says what is wrong.
func ParseEstimate(raw string) (int64, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return 0, errors.New("empty; want a duration such as 90m or a number of seconds")
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return checkEstimate(n)
	} else if errors.Is(err, strconv.ErrRange) {
		return 0, errors.New("too large; at most 100 years")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("neither a duration such as 90m nor a number of seconds")
	}
	if d <= 0 {
		return 0, errors.New("must be at least 1s")
	}
	secs := int64(d / time.Second)
	if d%time.Second != 0 {
		secs++
	}
	return checkEstimate(secs)
}

func checkEstimate(secs int64) (int64, error) {
	switch {
	case secs < 1:
		return 0, errors.New("must be at least 1 second")
	case secs > maxEstimate:
		return 0, errors.New("too large; at most 100 years")
	}
	return secs, nil
}

// memberAnnotation returns the value of annotation key that the members of
// g carrying it agree on, "" when none carries it, or a problem when two
// disagree.
func memberAnnotation(g *gangInfo, key string) (value, problem string) {
	var lo, hi string
	seen := false
	for _, p := range g.members {
		v, ok := p.pod.Annotations[key]
		if !ok {
			continue
		}
		if !seen {
			lo, hi, seen = v, v, true
			continue
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo != hi {
		return "", fmt.Sprintf("members disagree on annotation %s: %q and %q", key, lo, hi)
	}
	return lo, ""
}

// specValue finds the value of one gang-level setting: the PodGroup's field
// (when field is not empty), its annotation, or the members' annotation.
// from says where it came from, for messages.
func specValue(g *gangInfo, pg *v1alpha1.PodGroup, field, key string) (value, from, problem string) {
	if field != "" {
		return field, "", ""
	}
	if pg != nil {
		if v, ok := pg.Annotations[key]; ok {
			return v, fmt.Sprintf("annotation %s=%q of PodGroup %s", key, v, pg.Name), ""
		}
	}
	v, problem := memberAnnotation(g, key)
	return v, fmt.Sprintf("annotation %s=%q of the members", key, v), problem
}

// applySpec resolves the gang's estimate, required topology level and GPU
// model into v. What cannot be read becomes v.invalid, unless the gang is
// already invalid for another reason.
func (s *Store) applySpec(g *gangInfo, v *gangView) {
	pg := v.podGroup
	var problems []string
	// Estimate.
	var field string
	if pg != nil && pg.Spec.EstimatedRuntimeSeconds != nil {
		field = strconv.FormatInt(*pg.Spec.EstimatedRuntimeSeconds, 10)
	}
	raw, from, problem := specValue(g, pg, field, AnnotationEstimatedRuntime)
	switch {
	case problem != "":
		problems = append(problems, problem)
	case raw != "":
		est, err := ParseEstimate(raw)
		if err != nil {
			if from == "" {
				from = fmt.Sprintf("estimatedRuntimeSeconds %s", raw)
			}
			problems = append(problems, fmt.Sprintf("%s: %v", from, err))
		}
		v.estimate, v.declared = s.correctEstimate(v.queue, est, v.arrival), est
	default:
		v.estimate = deadlineEstimate(g)
		if v.estimate == 0 {
			v.estimate = s.history[v.queue].p90()
			v.estimateFromHistory = true
		}
	}
	// Required topology level (the core checks that it is a level), and
	// GPU model.
	var topology, model string
	if pg != nil {
		topology, model = pg.Spec.RequiredTopology, pg.Spec.GPUModel
	}
	v.requiredLevel = labelSpec(g, pg, topology, AnnotationRequiredTopology, "a node label key", validation.IsQualifiedName, &problems)
	v.gpuModel = labelSpec(g, pg, model, AnnotationGPUModel, "a label value", validation.IsValidLabelValue, &problems)
	if v.gpuModel != "" {
		for _, p := range v.pending {
			if c := p.cons; c != nil {
				if have, ok := c.NodeSelector[s.gpuModelLabel]; ok && have != v.gpuModel {
					problems = append(problems, fmt.Sprintf("the gang's GPU model %s conflicts with pod %s's nodeSelector %s=%s",
						v.gpuModel, p.pod.Name, s.gpuModelLabel, have))
					break
				}
			}
		}
	}
	if len(problems) > 0 && v.invalid == "" {
		v.invalid = strings.Join(problems, "; ")
	}
}

// correctEstimate is the estimate a gang of queue that declares declared
// and arrived at arrival runs by: declared times the factor of the queue's
// era of that arrival when the store corrects estimates, declared otherwise
// (0 stays 0: no estimate).
func (s *Store) correctEstimate(queue string, declared, arrival int64) int64 {
	if !s.correcting || declared <= 0 {
		return declared
	}
	return core.CorrectEstimate(declared, s.history[queue].factorAt(arrival), maxEstimate)
}

// deadlineEstimate is the smallest activeDeadlineSeconds of g's members, or
// 0: Kubernetes ends a pod at that time after it starts, so the gang runs no
// longer.
func deadlineEstimate(g *gangInfo) int64 {
	var est int64
	for _, p := range g.members {
		if d := p.pod.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 && (est == 0 || *d < est) {
			est = *d
		}
	}
	return min(est, maxEstimate)
}

// withLabel returns base with node label key=value required, shared
// by every member with the same base constraints and model so that the core
// can remember per cycle that such a member found no node.
func (c *constraintsCache) withLabel(base *core.Constraints, key, value string) *core.Constraints {
	k := labelledKey{base: base, key: key, value: value}
	if cached, ok := c.labelled[k]; ok {
		return cached
	}
	out := &core.Constraints{NodeSelector: map[string]string{key: value}}
	if base != nil {
		for k, v := range base.NodeSelector {
			if k != key {
				out.NodeSelector[k] = v
			}
		}
		out.Affinity, out.Tolerations = base.Affinity, base.Tolerations
	}
	if len(c.labelled) >= constraintsMax {
		clear(c.labelled)
	}
	c.labelled[k] = out
	return out
}

type labelledKey struct {
	base       *core.Constraints
	key, value string
}

// labelSpec resolves a gang setting that is a label key or value, from the
// PodGroup's field or the annotation, and checks it with valid; a problem
// goes to problems and leaves the setting empty.
func labelSpec(g *gangInfo, pg *v1alpha1.PodGroup, field, annotation, what string, valid func(string) []string, problems *[]string) string {
	value, from, problem := specValue(g, pg, field, annotation)
	value = strings.TrimSpace(value)
	switch {
	case problem != "":
		*problems = append(*problems, problem)
		return ""
	case value != "" && from != "":
		if errs := valid(value); len(errs) > 0 {
			*problems = append(*problems, fmt.Sprintf("%s is not %s: %s", from, what, strings.Join(errs, "; ")))
			return ""
		}
	}
	return value
}
