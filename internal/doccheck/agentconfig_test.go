package doccheck_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// checkAgentConfigs checks the agent configurations the docs show (opencode's
// JSON, Codex's TOML) as the reader fills them in: /path/to/pmgate/examples/
// <agent> becomes a directory gateway recipe <agent> wrote, with the model and
// base URL the block names, and the block must then say what the recipe's
// file says (every setting of a Codex block is one of the recipe's, in the
// same table; an opencode block equals the recipe's, the key aside). It adds
// their table rows and returns where they are.
func checkAgentConfigs(ctx context.Context, t *testing.T, table *snippetTable, all []snippet, bin, repo string) map[string]bool {
	t.Helper()
	done := map[string]bool{}
	for _, s := range all {
		switch {
		case s.lang == "toml" && strings.Contains(s.body, "model_instructions_file"):
			model := "pmgate-demo"
			if m := regexp.MustCompile(`(?m)^model = "([^"]+)"`).FindStringSubmatch(s.body); m != nil {
				model = m[1]
			}
			base := "http://127.0.0.1:8788"
			if m := regexp.MustCompile(`(?m)^base_url = "([^"]+)/v1"`).FindStringSubmatch(s.body); m != nil {
				base = m[1]
			}
			dir := recipeFor(ctx, t, bin, "codex", base, model)
			want, err := os.ReadFile(filepath.Join(dir, "config.toml"))
			if err != nil {
				t.Fatal(err)
			}
			rec := tomlEntries(string(want))
			for _, e := range tomlEntries(strings.ReplaceAll(s.body, "/path/to/pmgate/examples/codex", dir)) {
				if !slices.Contains(rec, e) {
					t.Errorf("%s: %q, filled in as the docs say, is not what gateway recipe codex writes:\n%s", s.where(), e, want)
				}
			}
			table.add(s.where(), statusSyntax, "toml: filled in, each setting is gateway recipe codex's")
		case s.lang == "json" && s.marker == "" && strings.Contains(s.body, `{"provider"`):
			var doc opencodeConfig
			filled := strings.ReplaceAll(s.body, "/path/to/pmgate/examples/opencode", "DIR")
			if err := json.Unmarshal([]byte(filled), &doc); err != nil {
				t.Errorf("%s: %v", s.where(), err)
				continue
			}
			p := doc.Provider["pmgate"]
			if len(p.Models) != 1 || !strings.HasSuffix(p.Options.BaseURL, "/v1") {
				t.Errorf("%s: want one model and a baseURL ending in /v1: %+v", s.where(), doc)
				continue
			}
			var model string
			for m := range p.Models {
				model = m
			}
			dir := recipeFor(ctx, t, bin, "opencode", strings.TrimSuffix(p.Options.BaseURL, "/v1"), model)
			if err := json.Unmarshal([]byte(strings.ReplaceAll(filled, "DIR", dir)), &doc); err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, "opencode.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rec opencodeConfig
			if err := json.Unmarshal(want, &rec); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(doc) != fmt.Sprint(rec) {
				t.Errorf("%s: filled in as the docs say, differs from gateway recipe opencode's opencode.json (apiKey aside):\ndoc:    %+v\nrecipe: %+v", s.where(), doc, rec)
			}
			reason := "parsed as JSON; filled in, it is gateway recipe opencode's (the key aside)"
			skip, err := opencodeAccepts(ctx, t, repo, []byte(strings.ReplaceAll(filled, "DIR", dir)))
			if err != nil {
				t.Errorf("%s: filled in as the docs say, opencode refuses it: %v", s.where(), err)
			}
			if skip == "" {
				reason += " and opencode loads it"
			}
			table.add(s.where(), statusSyntax, reason)
		default:
			continue
		}
		done[s.where()] = true
	}
	return done
}

// tomlEntries are tomlSettings qualified by their table: "[t] k = v".
func tomlEntries(text string) []string {
	var out []string
	table := ""
	for _, l := range tomlSettings(text) {
		if strings.HasPrefix(l, "[") {
			table = l
			continue
		}
		out = append(out, table+" "+l)
	}
	return out
}

// opencodeAccepts has the pinned opencode load cfg (opencode debug config,
// with OPENCODE_CONFIG naming it and a fresh HOME), which fails on a {file:…}
// it cannot read; only in the loopback namespace. It returns why it did not
// ask ("" when it did) and opencode's error.
func opencodeAccepts(ctx context.Context, t *testing.T, repo string, cfg []byte) (skip string, err error) {
	t.Helper()
	if os.Getenv("PMGATE_SNIPPETS_NETNS") != "1" {
		return "opencode runs only in the loopback namespace", nil
	}
	oc := filepath.Join(repo, "clients", "js", "node_modules", "opencode-linux-x64", "bin", "opencode")
	if _, err := os.Stat(oc); err != nil {
		return "clients/js/node_modules/opencode-linux-x64 absent", nil
	}
	f := filepath.Join(t.TempDir(), "opencode.json")
	if err := os.WriteFile(f, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, oc, "debug", "config")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "OPENCODE_CONFIG="+f)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	return "", nil
}
