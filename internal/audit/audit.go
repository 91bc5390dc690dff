// Package audit collects, in test binaries, which declared transition rows each
// test exercised, so that `make audit` can prove every row was reached. Tests
// call Record for each row a facade reports as applied and Flush from TestMain.
// It is test support only; production code never imports it.
package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
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
