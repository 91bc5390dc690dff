package doccheck_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The snippets of README.md and docs/*.md (docs/DEVELOPMENT.md, "Snippets",
// is the convention). A fenced block's info string is its language and, after
// it, one marker:
//
//	```sh run        executed against the demo by `make test-snippets`
//	```sh live       needs a live account or an external program: syntax only
//	```sh container  syntax here; run as written with podman by `make container-check`
//	```sh agent      an agent command line: run alone against the demo, only in the loopback namespace
//	```json fragment a shape with elisions: not checked
//
// An unmarked sh block is syntax-checked only (bash -n), so a new block can
// never run something by accident; json blocks are parsed, go blocks parsed as
// statements, js blocks checked by node --check. Other languages are not
// checked. An unknown marker fails the test with the file and line.

// demoKey is the key the docs give `gateway demo --key`; the snippet run
// starts the demo with it.
const demoKey = "sk-pmgate-demo-0123456789abcdef"

type snippet struct {
	file   string // relative to the repository root
	line   int    // of the opening fence
	lang   string
	marker string
	body   string
}

func (s snippet) where() string { return fmt.Sprintf("%s:%d", s.file, s.line) }

var markers = []string{"", "run", "live", "fragment", "container", "agent"}

// snippets returns every fenced block of README.md and docs/*.md.
func snippets(t *testing.T) []snippet {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var out []snippet
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		var cur *snippet
		var body []string
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if !strings.HasPrefix(line, "```") {
				if cur != nil {
					body = append(body, line)
				}
				continue
			}
			if cur != nil {
				cur.body = strings.Join(body, "\n") + "\n"
				out = append(out, *cur)
				cur, body = nil, nil
				continue
			}
			info := strings.Fields(strings.TrimPrefix(line, "```"))
			s := snippet{file: rel, line: n}
			if len(info) > 0 {
				s.lang = info[0]
			}
			if len(info) > 1 {
				s.marker = info[1]
			}
			if len(info) > 2 || !slices.Contains(markers, s.marker) {
				t.Errorf("%s: unknown snippet marker %q (docs/DEVELOPMENT.md#snippets lists run, live, container, agent, fragment)", s.where(), strings.Join(info[1:], " "))
			}
			cur = &s
		}
		fh.Close()
		if cur != nil {
			t.Errorf("%s: unterminated code block", cur.where())
		}
	}
	return out
}

// TestEverySnippetIsWellFormed checks the syntax of every snippet that has a
// checkable language, whatever its marker (except fragment).
func TestEverySnippetIsWellFormed(t *testing.T) {
	counts := map[string]int{}
	for _, s := range snippets(t) {
		if s.marker == "fragment" {
			counts["not checked"]++
			continue
		}
		switch s.lang {
		case "sh", "bash", "shell":
			out, err := exec.Command("bash", "-n", "-c", s.body).CombinedOutput()
			if err != nil {
				t.Errorf("%s: bash -n: %v\n%s", s.where(), err, out)
			}
			counts["sh syntax"]++
		case "json":
			var v any
			if err := json.Unmarshal([]byte(s.body), &v); err != nil {
				t.Errorf("%s: not JSON: %v (mark a shape with elisions ```json fragment)", s.where(), err)
			}
			counts["json parsed"]++
		case "go":
			src := "package p\nfunc _() {\n" + s.body + "\n}\n"
			if _, err := parser.ParseFile(token.NewFileSet(), s.where(), src, parser.AllErrors); err != nil {
				t.Errorf("%s: go: %v", s.where(), err)
			}
			counts["go parsed"]++
		case "js", "javascript", "mjs":
			node, err := exec.LookPath("node")
			if err != nil {
				counts["not checked"]++
				continue
			}
			f := filepath.Join(t.TempDir(), "snippet.mjs")
			if err := os.WriteFile(f, []byte(s.body), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(node, "--check", f).CombinedOutput(); err != nil {
				t.Errorf("%s: node --check: %v\n%s", s.where(), err, out)
			}
			counts["js checked"]++
		default:
			counts["not checked"]++
		}
	}
	t.Logf("snippets: %v", counts)
}

// TestEverySnippetMarkedRunRunsAgainstTheDemo runs every `sh run` block, in the
// order of its file, one shell session per file (so a variable a block
// exports holds in the next ones, as in a terminal), against `gateway demo
// --key <demoKey>` on a free port (written 127.0.0.1:8788 in the docs). The
// session's PATH starts with the freshly built gateway and a `go` that runs
// `go run ./cmd/gateway …` as that binary; HOME and the working directory are
// temporary, with examples/ of the repository in it. Only with
// PMGATE_SNIPPETS=1 (make test-snippets): it builds the binary and starts a
// demo.
func TestEverySnippetMarkedRunRunsAgainstTheDemo(t *testing.T) {
	if os.Getenv("PMGATE_SNIPPETS") != "1" {
		t.Skip("PMGATE_SNIPPETS=1 (make test-snippets) runs the snippets")
	}
	byFile := map[string][]snippet{}
	var order []string
	var clients []snippet // go run and js run blocks, each run on its own
	table := &snippetTable{}
	defer table.log(t)
	all := snippets(t)
	var agents []snippet // sh agent blocks
	for _, s := range all {
		if s.marker == "agent" {
			agents = append(agents, s)
		}
		if s.marker != "run" {
			continue
		}
		switch s.lang {
		case "sh":
			if byFile[s.file] == nil {
				order = append(order, s.file)
			}
			byFile[s.file] = append(byFile[s.file], s)
		case "go", "js":
			clients = append(clients, s)
		default:
			t.Errorf("%s: only sh, go and js blocks can be marked run", s.where())
		}
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	gateway := filepath.Join(bin, "gateway")
	abs, _ := filepath.Abs(root)
	build := exec.Command("go", "build", "-o", gateway, "./cmd/gateway")
	build.Dir = abs
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	realGo, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	shim := "#!/usr/bin/env bash\nif [ \"$1\" = run ] && [ \"$2\" = ./cmd/gateway ]; then shift 2; exec " + gateway + " \"$@\"; fi\nexec " + realGo + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	demo := exec.CommandContext(ctx, gateway, "demo", "--port", "0", "--key", demoKey)
	demoOut := &lockedLines{}
	demo.Stdout, demo.Stderr = demoOut, demoOut
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = demo.Wait() }()
	addrRE := regexp.MustCompile(`base URL  http://(127\.0\.0\.1:\d+)/v1`)
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := addrRE.FindStringSubmatch(demoOut.String()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("the demo did not start:\n%s", demoOut.String())
	}

	ran := 0
	for _, file := range order {
		work := filepath.Join(tmp, "work", strings.ReplaceAll(file, "/", "_"))
		home := filepath.Join(tmp, "home", strings.ReplaceAll(file, "/", "_"))
		for _, d := range []string{work, home} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(filepath.Join(abs, "examples"), filepath.Join(work, "examples")); err != nil {
			t.Fatal(err)
		}
		var script strings.Builder
		for _, s := range byFile[file] {
			fmt.Fprintf(&script, "echo '::snippet %s' >&2\n%s", s.where(), strings.ReplaceAll(s.body, "127.0.0.1:8788", addr))
			ran++
		}
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script.String())
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "HOME="+home)
		cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
			return strings.HasPrefix(kv, "PROVIDER_") || strings.HasPrefix(kv, "POSTMAN_") || strings.HasPrefix(kv, "KEY=")
		})
		out, err := cmd.CombinedOutput()
		if err != nil {
			last := "?"
			for _, l := range strings.Split(string(out), "\n") {
				if w, ok := strings.CutPrefix(l, "::snippet "); ok {
					last = w
				}
			}
			t.Errorf("%s: the snippet failed as pasted: %v\n%s", last, err, out)
		}
	}
	t.Logf("ran %d runnable sh snippets of %d files against the demo at %s", ran, len(order), addr)

	// The SDK snippets: each on its own, with PROVIDER_API_KEY holding the
	// demo's key, as the docs have the reader export it.
	clientEnv := append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PROVIDER_") || strings.HasPrefix(kv, "POSTMAN_")
	}), "PROVIDER_API_KEY="+demoKey, "HOME="+filepath.Join(tmp, "home"))
	nodeModules := filepath.Join(abs, "clients", "js", "node_modules")
	_, nodeErr := exec.LookPath("node")
	_, modErr := os.Stat(nodeModules)
	clientRan := map[string]bool{}
	for _, s := range clients {
		body := strings.ReplaceAll(s.body, "127.0.0.1:8788", addr)
		var out string
		var err error
		switch {
		case s.lang == "go":
			out, err = runGo(ctx, t, realGo, abs, body, "", clientEnv)
		case nodeErr != nil:
			table.add(s.where(), statusSkipped, "no node on PATH")
			continue
		case modErr != nil:
			table.add(s.where(), statusSkipped, "clients/js/node_modules absent: make test-clients installs the pinned SDKs (CI runs it first)")
			continue
		default:
			out, err = runJS(ctx, t, nodeModules, body, clientEnv)
		}
		if err != nil {
			t.Errorf("%s: the %s snippet failed against the demo: %v\n%s", s.where(), s.lang, err, out)
		}
		clientRan[s.where()] = true
		table.add(s.where(), statusRun, s.lang+" against the demo: "+firstLine(out))
	}

	// The agent command lines: each alone, in a work directory with
	// examples/ and a fresh HOME, with the pinned agents of clients/js on
	// PATH, and only where nothing can leave the machine.
	for _, s := range agents {
		clientRan[s.where()] = true // its row is added here, run or skipped
		if os.Getenv("PMGATE_SNIPPETS_NETNS") != "1" {
			table.add(s.where(), statusSkipped, "agent: runs only in the loopback namespace (make test-snippets: scripts/netns.sh)")
			continue
		}
		agentBin, missing := agentPath(t, tmp, nodeModules)
		if missing != "" {
			table.add(s.where(), statusSkipped, "agent: "+missing+" absent: make test-clients installs the pinned agents (CI runs it first)")
			continue
		}
		out, err := runAgentBlock(ctx, t, abs, strings.ReplaceAll(s.body, "127.0.0.1:8788", addr), agentBin+":"+bin, clientEnv)
		if err != nil {
			t.Errorf("%s: the agent command line failed against the demo: %v\n%s", s.where(), err, out)
		}
		table.add(s.where(), statusRun, "agent in the loopback namespace: "+firstLine(lastLine(out)))
	}

	// The agent configurations, filled in as the docs say.
	for w := range checkAgentConfigs(ctx, t, table, all, bin, abs) {
		clientRan[w] = true
	}

	// Every other snippet, with the reason it does not run.
	for _, s := range all {
		switch {
		case clientRan[s.where()]:
		case s.marker == "run" && s.lang == "sh":
			table.add(s.where(), statusRun, "sh session of "+s.file+" against the demo")
		case s.marker == "run":
		default:
			status, reason := whyNotRun(s)
			table.add(s.where(), status, reason)
		}
	}
	slices.SortStableFunc(table.rows, func(a, b tableRow) int { return compareWhere(a.where, b.where) })

	// The commands the demo banner prints, run as printed.
	runBanner(ctx, t, table, demoOut.String(), realGo, abs, bin, clientEnv)

	// The snippets the control page builds, as it copies them.
	runControlPage(ctx, t, table, "http://"+addr, realGo, abs, bin, clientEnv)
}

// firstLine is the first line of a run's output, for the table.
func firstLine(out string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	if len(l) > 60 {
		l = l[:60] + "…"
	}
	return strings.TrimSpace(l)
}

// compareWhere orders file:line by file, then by line number.
func compareWhere(a, b string) int {
	fa, la, _ := strings.Cut(a, ":")
	fb, lb, _ := strings.Cut(b, ":")
	if fa != fb {
		return strings.Compare(fa, fb)
	}
	var na, nb int
	fmt.Sscan(la, &na)
	fmt.Sscan(lb, &nb)
	return na - nb
}

// runBanner runs every command block the demo banner prints: the curl
// commands in bash (an "error" in the answer fails them), the Go SDK line
// compiled and run as a main body, Claude Code with the prompt on stdin (in
// the loopback namespace only). Python is skipped without its SDK.
func runBanner(ctx context.Context, t *testing.T, table *snippetTable, banner, realGo, repo, bin string, env []string) {
	t.Helper()
	blocks := bannerBlocks(banner)
	if len(blocks) == 0 {
		t.Errorf("the demo banner has no command block:\n%s", banner)
	}
	for _, b := range blocks {
		where := "demo banner: " + b.title
		if i := strings.Index(where, " ("); i > 0 {
			where = where[:i]
		}
		switch {
		case strings.HasPrefix(b.body, "curl "):
			out, err := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", b.body).CombinedOutput()
			if err != nil || strings.Contains(string(out), `"error"`) || !strings.Contains(string(out), "pmgate-demo") {
				t.Errorf("%s: failed as printed: %v\n%s\n%s", where, err, b.body, out)
			}
			table.add(where, statusRun, "bash against the demo")
		case strings.Contains(b.body, "openai.NewClient"):
			out, err := runGo(ctx, t, realGo, repo, b.body, "\t_ = client\n", env)
			if err != nil {
				t.Errorf("%s: failed as printed: %v\n%s\n%s", where, err, b.body, out)
			}
			table.add(where, statusRun, "go: compiled and run (builds the client; the line sends no request)")
		case strings.HasPrefix(b.body, "from openai"):
			if exec.Command("python3", "-c", "import openai").Run() != nil {
				table.add(where, statusSkipped, "no python3 with the openai package: PyPI is not among the registries reached here and Debian 12 packages no python3-openai")
				continue
			}
			out, err := exec.CommandContext(ctx, "python3", "-c", b.body).CombinedOutput()
			if err != nil {
				t.Errorf("%s: failed as printed: %v\n%s\n%s", where, err, b.body, out)
			}
			table.add(where, statusRun, "python3 against the demo")
		case strings.Contains(b.body, "claude"):
			// As an owner pastes it; the prompt comes on stdin, since an
			// interactive session cannot be driven here.
			if os.Getenv("PMGATE_SNIPPETS_NETNS") != "1" {
				table.add(where, statusSkipped, "agent: runs only in the loopback namespace (make test-snippets: scripts/netns.sh)")
				continue
			}
			agentBin, missing := agentPath(t, t.TempDir(), filepath.Join(repo, "clients", "js", "node_modules"))
			if missing != "" {
				table.add(where, statusSkipped, "agent: "+missing+" absent: make test-clients installs the pinned agents (CI runs it first)")
				continue
			}
			out, err := runAgentBlock(ctx, t, repo, "echo Hello | {\n"+b.body+"}\n", agentBin+":"+bin, env)
			if err != nil {
				t.Errorf("%s: the agent command line failed against the demo (prompt on stdin): %v\n%s\n%s", where, err, b.body, out)
			}
			table.add(where, statusRun, "agent in the loopback namespace, prompt on stdin: "+firstLine(lastLine(out)))
		default:
			t.Errorf("%s: a banner block this test does not know; teach runBanner to run it:\n%s", where, b.body)
		}
	}
}

// lockedLines is a goroutine-safe output buffer.
type lockedLines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lockedLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
