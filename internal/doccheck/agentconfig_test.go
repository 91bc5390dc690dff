package doccheck_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// checkAgentConfigs checks the agent configurations the docs show (opencode's
// JSON, Codex's TOML) as the reader fills them in: /path/to/pmgate/examples/
// <agent> becomes a directory gateway recipe <agent> wrote, with the model and
// base URL the block names, and the block must then say what the recipe's
// file says (every setting of a Codex block is one of the recipe's, in the
// same table; an opencode block equals the recipe's, the key aside). It adds
// their table rows and returns where they are.
func checkAgentConfigs(ctx context.Context, t *testing.T, table *snippetTable, all []snippet, bin string) map[string]bool {
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
			table.add(s.where(), statusSyntax, "parsed as JSON; filled in, it is gateway recipe opencode's (the key aside)")
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
