// Command report merges the hit files written by the property tests under
// $PMGATE_AUDIT_DIR. It writes two reports: -out (spec/AUDIT.md, tracked) lists
// every declared transition row and whether it was exercised, so it only
// changes when the machines or the verdict change; -counts (untracked, e.g.
// bin/audit-counts.md) holds the run's raw figures: how often each row was
// exercised and by which tests, which vary with the random seeds. It exits
// non-zero when a row was never exercised. `make audit` runs it.
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
	out := flag.String("out", "spec/AUDIT.md", "stable report to write (rows and verdicts)")
	countsOut := flag.String("counts", "", "report of the run's counts to write (optional)")
	settings := flag.String("settings", "", "how the tests were run, for the counts report")
	flag.Parse()
	missing, err := report(*hitsDir, *out, *countsOut, *settings)
	if err != nil {
		fmt.Fprintln(os.Stderr, "audit:", err)
		os.Exit(1)
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "audit: %d rows never exercised: %s\n", len(missing), strings.Join(missing, ", "))
		os.Exit(1)
	}
	fmt.Printf("audit: every row exercised; wrote %s\n", *out)
	if *countsOut != "" {
		fmt.Printf("audit: counts in %s\n", *countsOut)
	}
}

type rowKey struct{ machine, row string }

func report(dir, out, countsOut, settings string) ([]string, error) {
	counts, tests, err := readHits(dir)
	if err != nil {
		return nil, err
	}
	var stable, raw strings.Builder
	stable.WriteString("# Transition audit\n\n")
	stable.WriteString("<!-- Written by `make audit`; it changes only when a machine or a verdict changes. -->\n\n")
	stable.WriteString("Every declared row of every machine and whether the property tests exercised it. `make audit` fails when a row was never exercised; the run's counts (how often, by which tests) go to an untracked file (`bin/audit-counts.md`).\n\n")
	raw.WriteString("# Transition audit: counts of one run\n\n")
	if settings != "" {
		fmt.Fprintf(&raw, "Run: `%s`\n\n", settings)
	}
	var missing []string
	for _, m := range specgen.Machines() {
		t := m.Table
		fmt.Fprintf(&stable, "## %s (`%s`)\n\n| id | from | event | to | exercised |\n|---|---|---|---|---|\n", t.Title, t.Name)
		fmt.Fprintf(&raw, "## %s (`%s`)\n\n| id | from | event | to | hits | tests |\n|---|---|---|---|---:|---|\n", t.Title, t.Name)
		for _, r := range t.Rows {
			k := rowKey{t.Name, r.ID}
			verdict := "yes"
			if counts[k] == 0 {
				missing = append(missing, t.Name+"/"+r.ID)
				verdict = "**never**"
			}
			fmt.Fprintf(&stable, "| %s | `%s` | `%s` | `%s` | %s |\n", r.ID, r.From, r.On, r.To, verdict)
			fmt.Fprintf(&raw, "| %s | `%s` | `%s` | `%s` | %d | %s |\n", r.ID, r.From, r.On, r.To, counts[k], testList(tests[k]))
		}
		stable.WriteString("\n")
		raw.WriteString("\n")
	}
	if err := os.WriteFile(out, []byte(stable.String()), 0o644); err != nil {
		return nil, err
	}
	if countsOut != "" {
		if err := os.MkdirAll(filepath.Dir(countsOut), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(countsOut, []byte(raw.String()), 0o644); err != nil {
			return nil, err
		}
	}
	return missing, nil
}

// readHits sums the hit files of dir per row, and per row and top-level test.
func readHits(dir string) (map[rowKey]int, map[rowKey]map[string]int, error) {
	names, err := filepath.Glob(filepath.Join(dir, "hits-*.json"))
	if err != nil {
		return nil, nil, err
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("no hit files in %q", dir)
	}
	counts := map[rowKey]int{}
	tests := map[rowKey]map[string]int{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, nil, err
		}
		var hits []audit.Hit
		if err := json.Unmarshal(b, &hits); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", n, err)
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
	return counts, tests, nil
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
