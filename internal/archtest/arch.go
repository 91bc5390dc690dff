// Package archtest enforces the import rules of docs/ARCHITECTURE.md: imports point
// inward (cmd → adapters → app → ports → domain), the domain imports only the
// standard library and its three allowed modules, and adapters do not import
// each other.
package archtest

import (
	"fmt"
	"sort"
	"strings"
)

// Module is the module path of pmgate.
const Module = "github.com/pmgate/pmgate"

// Package is what the rules need to know of one package (from `go list -json`).
type Package struct {
	ImportPath string
	Imports    []string // direct imports of the non-test files
	Deps       []string // every transitive dependency
	Standard   bool
}

// allowedDomainModules are the only non-standard imports of domain/.
var allowedDomainModules = []string{
	"github.com/qmuntal/stateless",
	"github.com/cockroachdb/errors",
	"github.com/cockroachdb/redact",
}

// layer returns the layer of a pmgate package path, or "".
func layer(path string) string {
	rest, ok := strings.CutPrefix(path, Module+"/")
	if !ok {
		return ""
	}
	first, _, _ := strings.Cut(rest, "/")
	return first
}

// adapterOf returns the adapter name of a path under adapters/, or "".
func adapterOf(path string) string {
	rest, ok := strings.CutPrefix(path, Module+"/adapters/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// rank orders layers inward: a package may import only packages of a rank
// strictly lower, or of its own layer where noted. internal/ is test support
// and tools, which may import anything but must never be imported by
// production layers other than cmd.
var rank = map[string]int{"domain": 0, "ports": 1, "app": 2, "adapters": 3, "cmd": 4}

// Check returns one line per violated rule, sorted; none means the graph is clean.
func Check(pkgs []Package, standard map[string]bool) []string {
	var v []string
	for _, p := range pkgs {
		from := layer(p.ImportPath)
		fr, ok := rank[from]
		if !ok {
			continue // internal/ tools and test support
		}
		for _, imp := range p.Imports {
			if from == "domain" && layer(imp) == "" && !standard[imp] && !allowedModule(imp) {
				v = append(v, fmt.Sprintf("%s imports %s: domain/ may import only the standard library, stateless and cockroachdb/errors", p.ImportPath, imp))
			}
			to := layer(imp)
			if to == "" {
				continue
			}
			if to == "internal" {
				v = append(v, fmt.Sprintf("%s imports %s: production code must not import internal test support", p.ImportPath, imp))
				continue
			}
			tr := rank[to]
			switch {
			case to == from && from == "adapters":
				if a, b := adapterOf(p.ImportPath), adapterOf(imp); a != b {
					v = append(v, fmt.Sprintf("%s imports %s: adapters must not import each other", p.ImportPath, imp))
				}
			case to == from:
				// within a layer is fine
			case tr > fr:
				v = append(v, fmt.Sprintf("%s imports %s: imports must point inward (%s may not import %s)", p.ImportPath, imp, from, to))
			}
		}
		if from == "domain" {
			for _, d := range p.Deps {
				if l := layer(d); l != "" && l != "domain" {
					v = append(v, fmt.Sprintf("%s depends on %s: domain/ must not reach outer layers", p.ImportPath, d))
				}
			}
		}
	}
	sort.Strings(v)
	return v
}

func allowedModule(imp string) bool {
	for _, m := range allowedDomainModules {
		if imp == m || strings.HasPrefix(imp, m+"/") {
			return true
		}
	}
	return false
}
