//go:build e2e

// Package e2e runs Phalanx's Kubernetes adapter in-process against a real
// kube-apiserver and etcd with KWOK nodes, replaying the user experiments
// of the seed files (kube-batch with tf-operator, ACK's pod-group labels)
// and the failure modes around them: malformed input, a scheduler restart,
// and a few hundred pods at once; and the features of big gangs: a
// reservation with backfill, topology domains and GPU models.
//
// The files carry the build tag e2e, so `go test ./...` skips the package.
// `make e2e` (hack/test-e2e.sh) starts a dedicated local cluster on ports
// of its own and runs
//
//	go test -tags e2e -count=1 -v -timeout 20m ./test/e2e
//
// with KUBECONFIG pointing at it. Without KUBECONFIG the suite fails: a
// suite that skips would read as passing. The cluster must have no nodes
// when the suite starts; every test creates its own KWOK nodes and its own
// namespace, and removes both when it ends.
package e2e
