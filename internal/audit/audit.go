// Package audit collects, in test binaries, which declared transition rows each
// test exercised, so that `make audit` can prove every row was reached. Tests
// call Record for each row a facade reports as applied, and TestMain calls Main
// (which flushes the hits and checks that every declared row was applied).
// It is test support only; production code never imports it.
package audit

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pmgate/pmgate/domain/fsm"
)

// Hit is one (machine, row, test) count.
type Hit struct {
	Machine string `json:"machine"`
	Row     string `json:"row"`
	Test    string `json:"test"`
	Count   int    `json:"count"`
}

type key struct{ machine, row, test string }

var (
	mu   sync.Mutex
	hits = map[key]int{}
)

// Record notes that test exercised row of machine once.
func Record(machine, row, test string) {
	mu.Lock()
	hits[key{machine, row, test}]++
	mu.Unlock()
}

// Snapshot returns the hits recorded so far.
func Snapshot() []Hit {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Hit, 0, len(hits))
	for k, n := range hits {
		out = append(out, Hit{k.machine, k.row, k.test, n})
	}
	return out
}

// Dir is the environment variable naming the directory hit files go to.
const Dir = "PMGATE_AUDIT_DIR"

// Flush writes the hits of this test binary to $PMGATE_AUDIT_DIR as one JSON
// file; it does nothing when the variable is unset.
func Flush() error {
	dir := os.Getenv(Dir)
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(Snapshot())
	if err != nil {
		return err
	}
	name := filepath.Join(dir, fmt.Sprintf("hits-%d.json", os.Getpid()))
	return os.WriteFile(name, b, 0o644)
}

// Main runs a package's tests (m.Run), writes their hits with Flush and then,
// when the run was complete and passed, fails it unless every row of tables
// was applied by some test. It replaces a last-declared coverage test: the
// check sees every test's hits whatever their order, shuffling or
// parallelism. A run narrowed by -run or -skip is not judged (not every test
// ran).
// Use it as os.Exit(audit.Main(m, tables...)) in TestMain.
func Main(m *testing.M, tables ...fsm.Table) int {
	code := m.Run()
	if err := Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "audit:", err)
		code = 1
	}
	if code != 0 || !fullRun() {
		return code
	}
	if missing := Missing(tables...); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "audit: no test applied %d declared rows: %s\n", len(missing), strings.Join(missing, ", "))
		return 1
	}
	return 0
}

// Missing returns, as machine/row, the rows of tables no hit recorded so far
// names, in declaration order.
func Missing(tables ...fsm.Table) []string {
	hit := map[[2]string]bool{}
	for _, h := range Snapshot() {
		hit[[2]string{h.Machine, h.Row}] = true
	}
	var missing []string
	for _, t := range tables {
		for _, r := range t.Rows {
			if !hit[[2]string{t.Name, r.ID}] {
				missing = append(missing, t.Name+"/"+r.ID)
			}
		}
	}
	return missing
}

// fullRun reports whether every test of the binary ran: no -run, no -skip.
func fullRun() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return true
}
