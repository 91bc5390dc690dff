package doccheck_test

import (
	"context"
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

// The table `make test-snippets` prints: every snippet of README.md and
// docs/*.md, and every command the demo banner prints, with what the run did
// with it and why when it did not run it.

const (
	statusRun        = "run"
	statusSyntax     = "syntax-only"
	statusSkipped    = "skipped"
	statusNotChecked = "not checked"
)

type tableRow struct {
	where, status, reason string
}

type snippetTable struct{ rows []tableRow }

func (tb *snippetTable) add(where, status, reason string) {
	tb.rows = append(tb.rows, tableRow{where, status, reason})
}

func (tb *snippetTable) log(t *testing.T) {
	t.Helper()
	var b strings.Builder
	counts := map[string]int{}
	b.WriteString("snippet table (docs/DEVELOPMENT.md#snippets):\n")
	for _, r := range tb.rows {
		counts[r.status]++
		fmt.Fprintf(&b, "  %-34s %-12s %s\n", r.where, r.status, r.reason)
	}
	fmt.Fprintf(&b, "  total %d: %d %s, %d %s, %d %s, %d %s", len(tb.rows), counts[statusRun], statusRun,
		counts[statusSyntax], statusSyntax, counts[statusSkipped], statusSkipped, counts[statusNotChecked], statusNotChecked)
	t.Log(b.String())
}

// whyNotRun is the table's reason for a snippet the run does not execute.
func whyNotRun(s snippet) (status, reason string) {
	switch s.marker {
	case "fragment":
		return statusNotChecked, "fragment: a shape with elisions"
	case "live":
		return statusSyntax, "live: needs a Postman account or an external program"
	case "container":
		return statusSyntax, "container: make container-check runs it as written with podman"
	}
	switch s.lang {
	case "json":
		return statusSyntax, "parsed as JSON"
	case "go":
		return statusSyntax, "unmarked: parsed as Go statements"
	case "js", "javascript", "mjs":
		return statusSyntax, "unmarked: node --check"
	case "sh", "bash", "shell":
		return statusSyntax, "unmarked: bash -n; " + whyShellNotRun(s.body)
	case "":
		return statusNotChecked, "no language"
	}
	return statusNotChecked, s.lang + ": no checker"
}

// whyShellNotRun names what keeps an unmarked sh block from running as
// pasted, from its first command.
func whyShellNotRun(body string) string {
	switch {
	case strings.Contains(body, "/path/to/") || regexp.MustCompile(`<[A-Za-z_][A-Za-z_ ]*>`).MatchString(body):
		return "holds placeholders (<…>, /path/to/…) the reader fills in"
	case strings.Contains(body, "claude") || strings.Contains(body, "opencode ") || strings.Contains(body, "codex "):
		return "an agent command line: make test-clients runs the agent's recipe in the loopback namespace"
	case strings.Contains(body, "gateway demo"):
		return "starts the demo, which serves until Ctrl-C (this run starts it itself)"
	case strings.Contains(body, "sudo "):
		return "needs root and changes the system"
	}
	for _, l := range strings.Split(body, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch {
		case f[0] == "make":
			return "a make target: CI runs it as a step of its own"
		case f[0] == "go" && len(f) > 1 && f[1] == "install":
			return "installs into $(go env GOPATH)/bin"
		case f[0] == "gateway" && len(f) > 1 && (f[1] == "keys" || f[1] == "usage"):
			return "needs a key file or a store of the reader's own"
		}
		break
	}
	return "not marked run"
}

// goImports are the packages a Go snippet may name without importing them.
var goImports = map[string]string{
	"context": "context",
	"fmt":     "fmt",
	"log":     "log",
	"os":      "os",
	"openai":  "github.com/openai/openai-go/v3",
	"option":  "github.com/openai/openai-go/v3/option",
}

// runGo runs a Go snippet as the body of main, with ctx defined and the
// packages of goImports it names imported, in a module that requires what
// pmgate's go.mod requires (so the SDKs come from the module cache, offline).
func runGo(ctx context.Context, t *testing.T, realGo, repo, body, tail string, env []string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	mod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod = regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(mod, []byte("module snippet"))
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	var imports []string
	for name, path := range goImports {
		if name == "context" || regexp.MustCompile(`\b`+name+`\.`).MatchString(body) {
			imports = append(imports, fmt.Sprintf("\t%q", path))
		}
	}
	slices.Sort(imports)
	src := "package main\n\nimport (\n" + strings.Join(imports, "\n") + "\n)\n\nfunc main() {\n\tctx := context.Background()\n\t_ = ctx\n" + body + tail + "}\n"
	for name, b := range map[string][]byte{"go.mod": mod, "go.sum": sum, "main.go": []byte(src)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, realGo, "run", ".")
	cmd.Dir = dir
	// The caches of the real environment: HOME is temporary here, and
	// GOPATH's default follows it.
	caches, err := exec.Command(realGo, "env", "GOPATH", "GOMODCACHE", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	c := strings.Split(strings.TrimSpace(string(caches)), "\n")
	if len(c) != 3 {
		t.Fatalf("go env: %q", caches)
	}
	cmd.Env = append(slices.Clone(env), "GOPATH="+c[0], "GOMODCACHE="+c[1], "GOCACHE="+c[2],
		"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// runJS runs a JS snippet as an ES module next to clients/js/node_modules
// (the SDK versions the client suite pins).
func runJS(ctx context.Context, t *testing.T, nodeModules, body string, env []string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(nodeModules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "snippet.mjs")
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, "node", f)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// bannerBlock is one command the demo banner prints: its title line and its
// indented lines.
type bannerBlock struct{ title, body string }

// bannerBlocks splits the demo's banner into its titled, indented blocks
// ("JSON:", "Streaming:", "OpenAI Go SDK (…):", …).
func bannerBlocks(banner string) []bannerBlock {
	var out []bannerBlock
	cur := -1
	para, titled := "", false // a title may span lines: its first line, and whether the last ends with ':'
	for _, l := range strings.Split(banner, "\n") {
		switch {
		case strings.HasPrefix(l, "  ") && (cur >= 0 || titled):
			if cur < 0 {
				out = append(out, bannerBlock{title: strings.TrimSuffix(para, ":")})
				cur, para, titled = len(out)-1, "", false
			}
			out[cur].body += strings.TrimPrefix(l, "  ") + "\n"
		case strings.TrimSpace(l) == "" || strings.HasPrefix(l, " "):
			cur, para, titled = -1, "", false
		default:
			if para == "" {
				para = l
			}
			cur, titled = -1, strings.HasSuffix(l, ":")
		}
	}
	return slices.DeleteFunc(out, func(b bannerBlock) bool { return b.body == "" })
}

// agentPath makes a directory with the agents a snippet may call (claude),
// linked to the native binaries clients/js pins, and names the first one
// missing.
func agentPath(t *testing.T, tmp, nodeModules string) (dir, missing string) {
	t.Helper()
	dir = filepath.Join(tmp, "agents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, rel := range map[string]string{"claude": "@anthropic-ai/claude-code-linux-x64/claude"} {
		target := filepath.Join(nodeModules, rel)
		if _, err := os.Stat(target); err != nil {
			return "", "clients/js/node_modules/" + rel
		}
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return dir, ""
}

// runAgentBlock runs an agent block in bash -euo pipefail, in a fresh work
// directory holding the repository's examples/ and a fresh HOME, with path
// (the agents, the built gateway) first on PATH.
func runAgentBlock(ctx context.Context, t *testing.T, repo, body, path string, env []string) (string, error) {
	t.Helper()
	work, home := t.TempDir(), t.TempDir()
	if err := os.Symlink(filepath.Join(repo, "examples"), filepath.Join(work, "examples")); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, "bash", "-euo", "pipefail", "-c", body)
	cmd.Dir = work
	cmd.Env = append(slices.Clone(env), "HOME="+home, "PATH="+path+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err == nil && strings.TrimSpace(string(out)) == "" {
		err = fmt.Errorf("no output")
	}
	return string(out), err
}

// lastLine is the last non-empty line of an output.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
