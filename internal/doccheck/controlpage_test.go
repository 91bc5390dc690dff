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

// pageSnippetsJS prints, as JSON, the [name, text] pairs the control page's
// snippets(k) builds for the key argv[3]: the function is cut out of the
// app.js the demo serves and run in a node vm with only what it reads, the
// page's origin and the overview /admin/api/overview answers, so the text is
// the one the page copies.
const pageSnippetsJS = `import vm from "node:vm";
const [origin, key] = process.argv.slice(2);
const res = await fetch(origin + "/admin/static/app.js");
if (!res.ok) throw new Error("app.js: HTTP " + res.status);
const src = await res.text();
const start = src.indexOf("  function snippets(k) {");
const end = src.indexOf("\n  }\n", start);
if (start < 0 || end < 0) throw new Error("app.js has no function snippets(k)");
const ov = await fetch(origin + "/admin/api/overview", { headers: { Authorization: "Bearer " + key } });
if (!ov.ok) throw new Error("/admin/api/overview: HTTP " + ov.status);
const ctx = vm.createContext({ location: { origin }, overview: await ov.json() });
vm.runInContext(src.slice(start, end + 4) + "\nthis.out = snippets(" + JSON.stringify(key) + ");", ctx);
process.stdout.write(JSON.stringify(ctx.out));
`

// pageSnippets runs pageSnippetsJS against the demo at origin.
func pageSnippets(ctx context.Context, t *testing.T, origin string) ([][2]string, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "page.mjs")
	if err := os.WriteFile(f, []byte(pageSnippetsJS), 0o600); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, "node", f, origin, demoKey).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return nil, fmt.Errorf("%w: %s", err, stderr)
	}
	var pairs [][2]string
	if err := json.Unmarshal(out, &pairs); err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	return pairs, nil
}

// runControlPage runs the snippets the control page builds, with the demo's
// key as the page copies them: curl in bash, the npm and Go SDK lines
// against the demo, the Claude Code line in the loopback namespace after the
// recipe command it names; the opencode config is parsed. Each becomes a
// table row "control page: <name>".
func runControlPage(ctx context.Context, t *testing.T, table *snippetTable, origin, realGo, repo, bin string, env []string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		table.add("control page", statusSkipped, "no node on PATH to run app.js's snippets(k)")
		return
	}
	pairs, err := pageSnippets(ctx, t, origin)
	if err != nil {
		t.Errorf("control page: app.js's snippets(k) did not run under node: %v", err)
		return
	}
	if len(pairs) == 0 {
		t.Errorf("control page: app.js's snippets(k) built no snippet")
	}
	nodeModules := filepath.Join(repo, "clients", "js", "node_modules")
	_, modErr := os.Stat(nodeModules)
	for _, p := range pairs {
		name, text := p[0], p[1]
		where := "control page: " + name
		if !strings.Contains(text, demoKey) && name != "Claude Code via 9router" {
			t.Errorf("%s: the copied snippet does not carry the key:\n%s", where, text)
		}
		switch name {
		case "curl":
			out, err := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", text).CombinedOutput()
			if err != nil || strings.Contains(string(out), `"error"`) || !strings.Contains(string(out), "pmgate-demo") {
				t.Errorf("%s: failed as copied: %v\n%s\n%s", where, err, text, out)
			}
			table.add(where, statusRun, "bash against the demo")
		case "openai (npm)":
			if modErr != nil {
				table.add(where, statusSkipped, "clients/js/node_modules absent: make test-clients installs the pinned SDKs (CI runs it first)")
				continue
			}
			out, err := runJS(ctx, t, nodeModules, text, env)
			if err != nil || strings.TrimSpace(out) == "" {
				t.Errorf("%s: failed as copied: %v\n%s\n%s", where, err, text, out)
			}
			table.add(where, statusRun, "js against the demo: "+firstLine(out))
		case "openai-go":
			out, err := runGo(ctx, t, realGo, repo, text+"\n",
				"\tif err != nil {\n\t\tpanic(err)\n\t}\n\tprintln(c.Choices[0].Message.Content)\n", env)
			if err != nil || strings.TrimSpace(out) == "" {
				t.Errorf("%s: failed as copied: %v\n%s\n%s", where, err, text, out)
			}
			table.add(where, statusRun, "go against the demo: "+firstLine(out))
		case "Claude Code":
			if os.Getenv("PMGATE_SNIPPETS_NETNS") != "1" {
				table.add(where, statusSkipped, "agent: runs only in the loopback namespace (make test-snippets: scripts/netns.sh)")
				continue
			}
			agentBin, missing := agentPath(t, t.TempDir(), nodeModules)
			if missing != "" {
				table.add(where, statusSkipped, "agent: "+missing+" absent: make test-clients installs the pinned agents (CI runs it first)")
				continue
			}
			// The recipe command its comment tells the reader to run first.
			m := regexp.MustCompile(`(?m)^# write its prompt file first: (gateway recipe .*)$`).FindStringSubmatch(text)
			if m == nil {
				t.Errorf("%s: no 'write its prompt file first: gateway recipe …' line:\n%s", where, text)
				continue
			}
			out, err := runAgentBlock(ctx, t, repo, m[1]+"\n"+text, agentBin+":"+bin, env)
			if err != nil {
				t.Errorf("%s: the agent command line failed against the demo: %v\n%s\n%s", where, err, text, out)
			}
			table.add(where, statusRun, "agent in the loopback namespace, after its recipe command: "+firstLine(lastLine(out)))
		case "opencode":
			var cfg struct {
				Provider map[string]struct {
					Options struct{ BaseURL, APIKey string }
				}
			}
			var lines []string
			for _, l := range strings.Split(text, "\n") {
				if !strings.HasPrefix(strings.TrimSpace(l), "//") {
					lines = append(lines, l)
				}
			}
			if err := json.Unmarshal([]byte(strings.Join(lines, "\n")), &cfg); err != nil {
				t.Errorf("%s: not JSON once its // lines are removed: %v\n%s", where, err, text)
			}
			if o := cfg.Provider["pmgate"].Options; o.BaseURL != origin+"/v1" || o.APIKey != demoKey {
				t.Errorf("%s: provider pmgate's baseURL %q and apiKey %q are not the demo's", where, o.BaseURL, o.APIKey)
			}
			// The rest is what gateway recipe opencode writes, with its
			// directory where the page writes /home/you/pmgate-opencode.
			dir := recipe(ctx, t, bin, "opencode", origin)
			want, err := os.ReadFile(filepath.Join(dir, "opencode.json"))
			if err != nil {
				t.Fatal(err)
			}
			var got, rec opencodeConfig
			if err := json.Unmarshal([]byte(strings.ReplaceAll(strings.Join(lines, "\n"), "/home/you/pmgate-opencode", dir)), &got); err != nil {
				t.Errorf("%s: %v", where, err)
			}
			if err := json.Unmarshal(want, &rec); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(rec) {
				t.Errorf("%s: differs from gateway recipe opencode's opencode.json (apiKey aside):\npage:   %+v\nrecipe: %+v", where, got, rec)
			}
			reason := "parsed as JSON without its // lines; the demo's baseURL and key; the rest as gateway recipe opencode writes it"
			skip, err := opencodeAccepts(ctx, t, repo, []byte(strings.ReplaceAll(strings.Join(lines, "\n"), "/home/you/pmgate-opencode", dir)))
			if err != nil {
				t.Errorf("%s: opencode refuses it: %v", where, err)
			}
			if skip == "" {
				reason += "; opencode loads it"
			}
			table.add(where, statusSyntax, reason)
		case "9router", "Claude Code via 9router":
			table.add(where, statusSkipped, "needs a running 9router: make test-clients runs pmgate behind 9router")
		case "Codex CLI":
			// Its settings are the ones gateway recipe codex writes, with its
			// directory where the page writes /home/you/pmgate-codex.
			dir := recipe(ctx, t, bin, "codex", origin)
			want, err := os.ReadFile(filepath.Join(dir, "config.toml"))
			if err != nil {
				t.Fatal(err)
			}
			got := tomlSettings(strings.ReplaceAll(text, "/home/you/pmgate-codex", dir))
			if rec := tomlSettings(string(want)); !slices.Equal(got, rec) {
				t.Errorf("%s: its settings differ from gateway recipe codex's config.toml:\npage:\n%s\nrecipe:\n%s", where, strings.Join(got, "\n"), strings.Join(rec, "\n"))
			}
			table.add(where, statusSyntax, "TOML: its settings, line by line, are the ones gateway recipe codex writes")
		default:
			t.Errorf("%s: a control page snippet this test does not know; teach runControlPage to run it:\n%s", where, text)
		}
	}
}

// opencodeConfig is what the page's opencode config and the recipe's share
// (the page's key is literal, the recipe's reads PROVIDER_API_KEY).
type opencodeConfig struct {
	Agent    map[string]struct{ Prompt string }
	Provider map[string]struct {
		NPM     string
		Models  map[string]struct{}
		Options struct{ BaseURL string }
	}
}

// recipe runs gateway recipe <agent> for the demo at origin into a fresh
// directory and returns it.
func recipe(ctx context.Context, t *testing.T, bin, agent, origin string) string {
	t.Helper()
	return recipeFor(ctx, t, bin, agent, origin, "pmgate-demo")
}

// recipeFor runs gateway recipe <agent> with origin's /v1 and model into a
// fresh directory and returns it.
func recipeFor(ctx context.Context, t *testing.T, bin, agent, origin, model string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pmgate-"+agent)
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "gateway"), "recipe", agent, "--dir", dir,
		"--base-url", origin+"/v1", "--model", model).CombinedOutput()
	if err != nil {
		t.Fatalf("gateway recipe %s: %v\n%s", agent, err, out)
	}
	return dir
}

// tomlSettings are the key = value and [table] lines of a TOML text, its
// comments and blank lines left out, spaces around '=' normalised.
func tomlSettings(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if k, v, ok := strings.Cut(l, "="); ok {
			l = strings.TrimSpace(k) + " = " + strings.TrimSpace(v)
		}
		out = append(out, l)
	}
	return out
}
