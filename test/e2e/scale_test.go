//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestManyGangs fills 20 nodes of 8 GPUs with 40 gangs of 4 one-GPU pods,
// exactly the cluster's 160 GPUs, created by 8 clients at once as job
// operators would. It asserts only that every pod is bound and runs and
// that no node is overcommitted; the times are logged as a smoke benchmark,
// never asserted.
func TestManyGangs(t *testing.T) {
	const nodes, gpusPerNode, gangs, members, creators = 20, 8, 40, 4, 8
	e := newEnv(t)
	e.addNodes(kwokNodes("many", nodes).GPUs(gpusPerNode))
	startScheduler(t)

	builders := make(chan *jobBuilder, gangs)
	for i := 0; i < gangs; i++ {
		builders <- gang(fmt.Sprintf("g%02d", i)).Members(members).GPUs(1).WorkerCPU("100m")
	}
	close(builders)
	var (
		mu   sync.Mutex
		jobs []*job
		errs []error
		wg   sync.WaitGroup
	)
	start := time.Now()
	for w := 0; w < creators; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range builders {
				j, err := e.tryCreate(e.ctx, b)
				mu.Lock()
				jobs, errs = append(jobs, j), append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	created := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	total := gangs * members
	e.eventually(3*time.Minute, fmt.Sprintf("all %d pods are bound", total), func(ctx context.Context) error {
		l, err := kube.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!="})
		if err != nil {
			return err
		}
		if len(l.Items) < total {
			return fmt.Errorf("%d/%d pods bound", len(l.Items), total)
		}
		return nil
	})
	elapsed := time.Since(start)
	t.Logf("%d gangs, %d pods on %d nodes: created in %v by %d clients; all bound %v after the first create, "+
		"%v after the last (%.0f pods bound/s overall)", gangs, total, nodes, created.Round(time.Millisecond), creators,
		elapsed.Round(time.Millisecond), (elapsed - created).Round(time.Millisecond), float64(total)/elapsed.Seconds())

	for _, j := range jobs {
		if err := e.bound(j)(e.ctx); err != nil {
			t.Error(err)
		}
	}
	if err := gpusWithinCapacity(e.ctx); err != nil {
		e.dump()
		t.Fatal(err)
	}
	e.eventually(time.Minute, "every pod runs", func(ctx context.Context) error {
		for _, j := range jobs {
			if err := e.running(j)(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}
