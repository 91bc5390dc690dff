package archtest_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/internal/archtest"
)

func goList(t *testing.T) ([]archtest.Package, map[string]bool) {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports,Deps,Standard", "github.com/pmgate/pmgate/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []archtest.Package
	std := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p archtest.Package
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Standard {
			std[p.ImportPath] = true
		}
		if strings.HasPrefix(p.ImportPath, archtest.Module+"/") {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs, std
}

func TestImportsPointInward(t *testing.T) {
	is := is.New(t)
	pkgs, std := goList(t)
	is.True(len(pkgs) > 5) // go list saw the module
	v := archtest.Check(pkgs, std)
	is.Equal(strings.Join(v, "\n"), "") // no layering violation
}

func TestTheCheckCatchesEachKindOfViolation(t *testing.T) {
	is := is.New(t)
	std := map[string]bool{"fmt": true, "net/http": true}
	pkgs := []archtest.Package{
		{ImportPath: "github.com/pmgate/pmgate/domain/x", Imports: []string{"fmt", "github.com/jackc/pgx/v5", "github.com/qmuntal/stateless"}},
		{ImportPath: "github.com/pmgate/pmgate/domain/y", Imports: []string{"github.com/pmgate/pmgate/ports"}, Deps: []string{"github.com/pmgate/pmgate/ports"}},
		{ImportPath: "github.com/pmgate/pmgate/ports", Imports: []string{"github.com/pmgate/pmgate/adapters/memstore"}},
		{ImportPath: "github.com/pmgate/pmgate/adapters/postman", Imports: []string{"github.com/pmgate/pmgate/adapters/emulator", "github.com/pmgate/pmgate/adapters/postman/pmconfig"}},
		{ImportPath: "github.com/pmgate/pmgate/app", Imports: []string{"github.com/pmgate/pmgate/internal/audit"}},
	}
	v := archtest.Check(pkgs, std)
	joined := strings.Join(v, "\n")
	is.True(strings.Contains(joined, "domain/x imports github.com/jackc/pgx/v5"))                 // foreign module in domain
	is.True(!strings.Contains(joined, "imports github.com/qmuntal/stateless"))                    // allowed module passes
	is.True(strings.Contains(joined, "domain/y imports github.com/pmgate/pmgate/ports"))          // domain importing outward
	is.True(strings.Contains(joined, "ports imports github.com/pmgate/pmgate/adapters/memstore")) // ports importing an adapter
	is.True(strings.Contains(joined, "adapters must not import each other"))                      // adapter to adapter
	is.True(!strings.Contains(joined, "pmconfig"))                                                // an adapter's own subpackage is fine
	is.True(strings.Contains(joined, "internal test support"))                                    // production importing test support
}
