package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// fileArgRE finds the files the docs have an owner name on a command line.
var fileArgRE = regexp.MustCompile("(?:--env-file |--out |--file |PROVIDER_KEYS_FILE=|PROBE_REPORT=)([A-Za-z0-9._-]+)")

// TestTheFilesTheDocsHaveAnOwnerCreateAreIgnored: every file README.md and
// docs/ have the owner create in the clone (an env file with the credential,
// a key file, probe reports, their MACs and failed siblings, the probe's
// default outputs) is ignored by git, so `git add .` never commits one.
func TestTheFilesTheDocsHaveAnOwnerCreateAreIgnored(t *testing.T) {
	is := is.New(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	docs, err := filepath.Glob("../../docs/*.md")
	is.NoErr(err)
	names := map[string]bool{"pmgate-probe.json": true, "pmgate-probe.web_session.json": true, "pmgate-probe.access_token.json": true}
	for _, f := range append(docs, "../../README.md") {
		b, err := os.ReadFile(f)
		is.NoErr(err)
		for _, m := range fileArgRE.FindAllStringSubmatch(string(b), -1) {
			if n := m[1]; !placeholder(n) {
				names[n] = true
			}
		}
	}
	is.True(names["my.env"] && names["probe.json"]) // the docs' own names were found
	var paths []string
	for n := range names {
		paths = append(paths, n)
		if strings.HasSuffix(n, ".json") && strings.Contains(n, "probe") { // a report: its MAC and failed sibling too
			paths = append(paths, n+".mac", failedPath(n))
		}
	}
	for _, p := range paths {
		cmd := exec.Command("git", "check-ignore", "--no-index", "-q", p)
		cmd.Dir = "../.."
		if err := cmd.Run(); err != nil {
			t.Errorf("%s is not ignored by .gitignore: a `git add .` would commit it", p)
		}
	}
	cmd := exec.Command("git", "ls-files", "-ci", "--exclude-standard")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	is.NoErr(err)
	is.Equal(strings.TrimSpace(string(out)), "") // and no tracked file is ignored by it
}

// placeholder reports a name the docs use for "your file" (FILE, F.json).
func placeholder(n string) bool {
	stem, _, _ := strings.Cut(n, ".")
	return stem == strings.ToUpper(stem)
}
