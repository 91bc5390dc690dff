package errs_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
)

// catalogRow is one row of the table in docs/ERRORS.md:
// | `code` | status | `type` | yes/no | when |
var catalogRow = regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([^|]+) \\| `([a-z_]+)` \\| (yes|no) \\| (.+) \\|$")

// TestTheErrorDocListsEveryCodeAsTheCatalogDefinesIt keeps docs/ERRORS.md
// true: every catalog code has exactly one row there, with its status, type
// and retryability, and the page lists no code the catalog lacks.
func TestTheErrorDocListsEveryCodeAsTheCatalogDefinesIt(t *testing.T) {
	is := is.New(t)
	doc, err := os.ReadFile("../../docs/ERRORS.md")
	is.NoErr(err)
	rows := map[string][]string{}
	for _, m := range catalogRow.FindAllStringSubmatch(string(doc), -1) {
		_, dup := rows[m[1]]
		is.True(!dup) // one row per code
		rows[m[1]] = m[2:]
	}
	for _, e := range errs.Catalog() {
		r, ok := rows[string(e.Code)]
		if !ok {
			t.Errorf("docs/ERRORS.md has no row for %s", e.Code)
			continue
		}
		status := strconv.Itoa(e.Status)
		if e.Status == 0 {
			status = "— (start-up)"
		}
		retry := map[bool]string{true: "yes", false: "no"}[e.Retryable]
		if r[0] != status || r[1] != string(e.Type) || r[2] != retry {
			t.Errorf("docs/ERRORS.md: %s is %s/%s/%s there, the catalog says %s/%s/%s", e.Code, r[0], r[1], r[2], status, e.Type, retry)
		}
		if len(r[3]) < 10 {
			t.Errorf("docs/ERRORS.md: %s does not say when it happens", e.Code)
		}
		delete(rows, string(e.Code))
	}
	for code := range rows {
		t.Errorf("docs/ERRORS.md lists %s, which is not in the catalog", code)
	}
}
