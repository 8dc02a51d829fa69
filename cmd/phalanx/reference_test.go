package main

import (
	"flag"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/phalanx-sched/phalanx/apis/scheduling/v1alpha1"
)

// TestReferenceNamesEveryField: docs/reference.md names every field of the
// PodGroup's and the Queue's spec and status, and every flag of phalanx
// scheduler.
func TestReferenceNamesEveryField(t *testing.T) {
	data, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, v := range []any{v1alpha1.PodGroupSpec{}, v1alpha1.PodGroupStatus{}, v1alpha1.QueueSpec{}, v1alpha1.QueueStatus{}} {
		typ := reflect.TypeOf(v)
		for i := 0; i < typ.NumField(); i++ {
			name := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]
			if name != "" && !strings.Contains(doc, "`"+name+"`") {
				t.Errorf("docs/reference.md does not name %s.%s", typ.Name(), name)
			}
		}
	}
	var f schedulerFlags
	fs := schedulerFlagSet(&f, io.Discard)
	n := 0
	fs.VisitAll(func(fl *flag.Flag) {
		n++
		if !strings.Contains(doc, "`--"+fl.Name+"`") {
			t.Errorf("docs/reference.md does not name the flag --%s", fl.Name)
		}
	})
	if n < 20 {
		t.Errorf("only %d flags visited", n)
	}
}
