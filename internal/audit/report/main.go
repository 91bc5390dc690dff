// Command report merges the hit files written by the property tests under
// $PMGATE_AUDIT_DIR into spec/AUDIT.md: for every declared transition row, how
// often it was exercised and by which tests. It exits non-zero when a row was
// never exercised. `make audit` runs it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pmgate/pmgate/app/specgen"
	"github.com/pmgate/pmgate/internal/audit"
)

func main() {
	hitsDir := flag.String("hits", "", "directory of hit files")
	out := flag.String("out", "spec/AUDIT.md", "report to write")
	settings := flag.String("settings", "", "how the tests were run, for the report header")
	flag.Parse()
	missing, err := report(*hitsDir, *out, *settings)
	if err != nil {
		fmt.Fprintln(os.Stderr, "audit:", err)
		os.Exit(1)
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "audit: %d rows never exercised: %s\n", len(missing), strings.Join(missing, ", "))
		os.Exit(1)
	}
	fmt.Printf("audit: every row exercised; wrote %s\n", *out)
}

type rowKey struct{ machine, row string }

func report(dir, out, settings string) ([]string, error) {
	names, err := filepath.Glob(filepath.Join(dir, "hits-*.json"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no hit files in %q", dir)
	}
	counts := map[rowKey]int{}
	tests := map[rowKey]map[string]int{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		var hits []audit.Hit
		if err := json.Unmarshal(b, &hits); err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		for _, h := range hits {
			k := rowKey{h.Machine, h.Row}
			counts[k] += h.Count
			if tests[k] == nil {
				tests[k] = map[string]int{}
			}
			tests[k][topLevel(h.Test)] += h.Count
		}
	}
	var b strings.Builder
	b.WriteString("# Transition audit\n\n")
	b.WriteString("<!-- Written by `make audit`; counts vary with the random seeds. -->\n\n")
	b.WriteString("Every declared row of every machine, how often the tests exercised it, and by which tests (top-level test name, hits). `make audit` fails when a row has no hits.\n\n")
	if settings != "" {
		fmt.Fprintf(&b, "Run: `%s`\n\n", settings)
	}
	var missing []string
	for _, m := range specgen.Machines() {
		t := m.Table
		fmt.Fprintf(&b, "## %s (`%s`)\n\n| id | from | event | to | hits | tests |\n|---|---|---|---|---:|---|\n", t.Title, t.Name)
		for _, r := range t.Rows {
			k := rowKey{t.Name, r.ID}
			if counts[k] == 0 {
				missing = append(missing, t.Name+"/"+r.ID)
			}
			fmt.Fprintf(&b, "| %s | `%s` | `%s` | `%s` | %d | %s |\n", r.ID, r.From, r.On, r.To, counts[k], testList(tests[k]))
		}
		b.WriteString("\n")
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return missing, nil
}

func topLevel(test string) string {
	if i := strings.IndexByte(test, '/'); i >= 0 {
		return test[:i]
	}
	return test
}

func testList(m map[string]int) string {
	type tc struct {
		name string
		n    int
	}
	var l []tc
	for n, c := range m {
		l = append(l, tc{n, c})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].n != l[j].n {
			return l[i].n > l[j].n
		}
		return l[i].name < l[j].name
	})
	parts := make([]string, len(l))
	for i, x := range l {
		parts[i] = fmt.Sprintf("%s (%d)", x.name, x.n)
	}
	if len(parts) == 0 {
		return "**never**"
	}
	return strings.Join(parts, ", ")
}
