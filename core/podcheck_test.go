package core

import "testing"

// checkPodConstraints is a placeholder for the independent checker.
func checkPodConstraints(t *testing.T, s *Snapshot, p Plan) { t.Helper() }
