package doccheck_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// root is the repository root, relative to this package.
const root = "../.."

// setting matches the names, by their prefixes, of the environment variables the gateway
// reads as settings. Upstream enums and error types (TOOL_RESPONSE, …) have
// other prefixes or live outside the scanned directories, except the error
// types in notSettings.
var setting = regexp.MustCompile(`"((?:PROVIDER|POSTMAN|MAX|REQUEST|TOOL_SCHEMA|CORRELATION|CONVERSATION|LOG|PROBE|ADMIN|METRICS|ALLOWED|BODY_READ|EMULATOR|USAGE|SHUTDOWN|IDEMPOTENCY|UPDATE)_[A-Z0-9_]+)"`)

// notSettings are upstream error types the scanned code names that share a
// setting's prefix.
var notSettings = map[string]bool{"CONVERSATION_NOT_FOUND": true}

// settingsInCode returns every setting name that appears as a string literal
// in the non-test Go files of the directories that parse configuration: the
// command (cmd/) and the Postman adapter (adapters/postman/, whose pmconfig
// reads the POSTMAN_* variables).
func settingsInCode(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, dir := range []string{"cmd", filepath.Join("adapters", "postman")} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range setting.FindAllStringSubmatch(string(src), -1) {
				if !notSettings[m[1]] {
					names = append(names, m[1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// settingRow matches the first column of a row of the settings table.
var settingRow = regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_]+)` \\|")

// TestTheConfigurationDocListsEverySetting keeps docs/CONFIGURATION.md true:
// every setting the code reads has a row in its settings table, and every row
// names a setting the code reads.
func TestTheConfigurationDocListsEverySetting(t *testing.T) {
	is := is.New(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "CONFIGURATION.md"))
	is.NoErr(err)
	rows := map[string]bool{}
	for _, m := range settingRow.FindAllStringSubmatch(string(doc), -1) {
		is.True(!rows[m[1]]) // one row per setting
		rows[m[1]] = true
	}
	code := settingsInCode(t)
	is.True(len(code) > 40) // the scan found the configuration code
	for _, name := range code {
		if !rows[name] {
			t.Errorf("docs/CONFIGURATION.md has no row for %s, which the code reads", name)
		}
		delete(rows, name)
	}
	for name := range rows {
		t.Errorf("docs/CONFIGURATION.md lists %s, which the code does not read", name)
	}
}
