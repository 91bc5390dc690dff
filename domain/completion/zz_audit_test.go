package completion_test

import (
	"flag"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/internal/audit"
)

// TestEveryRowIsExercised fails unless the package's tests applied every row of
// every rule. It is declared in the last file so that it runs after every other
// top-level test (none of them is parallel). It judges only a full, ordered run:
// with -run, -skip or -shuffle the other tests may not have run before it.
func TestEveryRowIsExercised(t *testing.T) {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			t.Skipf("row coverage is only judged on a full run (-%s is set)", name)
		}
	}
	if f := flag.Lookup("test.shuffle"); f != nil && f.Value.String() != "off" {
		t.Skip("row coverage is only judged on an ordered run (-shuffle is set)")
	}
	is := is.New(t)
	hit := map[[2]string]bool{}
	for _, h := range audit.Snapshot() {
		hit[[2]string{h.Machine, h.Row}] = true
	}
	var missing []string
	for _, rule := range allRules {
		tab := completion.Table(rule)
		for _, r := range tab.Rows {
			if !hit[[2]string{tab.Name, r.ID}] {
				missing = append(missing, tab.Name+"/"+r.ID)
			}
		}
	}
	is.Equal(missing, []string(nil)) // every declared row of every rule is applied by some test
}
