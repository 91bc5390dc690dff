package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestEveryMutantStillApplies keeps the curated list in step with the code:
// each mutant's edit must apply exactly once to the file it names, so that a
// change that moves the code also moves its mutant (make mutate would report
// it STALE only when someone runs it).
func TestEveryMutantStillApplies(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range mutants {
		if seen[m.name] {
			t.Errorf("two mutants are named %q", m.name)
		}
		seen[m.name] = true
		b, err := os.ReadFile(filepath.Join("..", "..", m.file))
		if err != nil {
			t.Errorf("%s: %v", m.name, err)
			continue
		}
		if n := bytes.Count(b, []byte(m.old)); n != 1 {
			t.Errorf("%s (%s): the edit applies %d times, not once", m.name, m.file, n)
		}
	}
}
