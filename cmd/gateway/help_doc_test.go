package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/pmgate/pmgate/adapters/emulator"
)

// TestServeHelpNamesEverySetting: `gateway serve --help` (and check-config's)
// names every setting of docs/CONFIGURATION.md that serve reads, so the
// one-screen list an owner sees cannot fall behind the reference.
func TestServeHelpNamesEverySetting(t *testing.T) {
	is := is.New(t)
	doc, err := os.ReadFile("../../docs/CONFIGURATION.md")
	is.NoErr(err)
	rows := regexp.MustCompile("(?m)^\\| `([A-Z][A-Z0-9_]+)` \\|").FindAllStringSubmatch(string(doc), -1)
	is.True(len(rows) > 40) // the table was found
	for _, cmd := range []string{"serve", "check-config"} {
		var out bytes.Buffer
		is.NoErr(run(t.Context(), []string{cmd, "--help"}, noEnv, &out, &out))
		words := map[string]bool{}
		for _, w := range strings.FieldsFunc(out.String(), func(r rune) bool { return r == ' ' || r == '\n' || r == ',' || r == '(' || r == ')' }) {
			words[w] = true
		}
		for _, r := range rows {
			if name := r[1]; !strings.HasPrefix(name, "EMULATOR_") && !words[name] {
				t.Errorf("gateway %s --help does not name %s", cmd, name)
			}
		}
	}
}

// TestHelpNamesEveryEmulatorProfileAndKeysHasHelp: the profiles a --profile
// flag accepts are all in the help that offers it, and every keys subcommand
// answers -h/--help with its usage instead of a flag error.
func TestHelpNamesEveryEmulatorProfileAndKeysHasHelp(t *testing.T) {
	is := is.New(t)
	for _, cmd := range []string{"demo", "emulator"} {
		var out bytes.Buffer
		is.NoErr(run(t.Context(), []string{cmd, "--help"}, noEnv, &out, &out))
		for _, p := range emulator.Profiles() {
			is.True(strings.Contains(out.String(), p)) // the help names the profile
		}
	}
	for _, sub := range []string{"new", "set", "list", "revoke"} {
		for _, flag := range []string{"-h", "--help"} {
			var out bytes.Buffer
			is.NoErr(run(t.Context(), []string{"keys", sub, flag}, noEnv, &out, &out)) // help is not an error
			is.True(strings.HasPrefix(out.String(), "usage: gateway keys"))
		}
	}
}
