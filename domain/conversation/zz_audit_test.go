package conversation_test

import (
	"flag"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/internal/audit"
)

// TestEveryRowIsExercised fails unless the package's tests applied every row
// of the anchor machine. It is declared in the last file so that it runs after
// every other top-level test; it judges only a full, ordered run.
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
	hit := map[string]bool{}
	for _, h := range audit.Snapshot() {
		if h.Machine == conversation.MachineName {
			hit[h.Row] = true
		}
	}
	var missing []string
	for _, r := range conversation.Table().Rows {
		if !hit[r.ID] {
			missing = append(missing, r.ID)
		}
	}
	is.Equal(missing, []string(nil)) // every declared row is applied by some test
}
