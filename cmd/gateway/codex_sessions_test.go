//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// codexTap is a recording reverse proxy between Codex and the gateway: the
// suite counts what the agent itself sends (its retries, its compaction
// request), which the emulator cannot see when the gateway refuses before
// sending.
type codexTap struct {
	url  string
	mu   sync.Mutex
	seen []tapped
}

// tapped is one request Codex sent through the tap and what the gateway answered.
type tapped struct {
	Path         string
	Body         []byte
	Status       int
	Conversation string // the answer's x-pmgate-conversation header
}

func newCodexTap(t *testing.T, target string) *codexTap {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tap := &codexTap{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1 // a stream goes through as it comes
	proxy.ModifyResponse = func(resp *http.Response) error {
		tap.mu.Lock()
		defer tap.mu.Unlock()
		if i, ok := resp.Request.Context().Value(tapKey{}).(int); ok {
			tap.seen[i].Status = resp.StatusCode
			tap.seen[i].Conversation = resp.Header.Get("x-pmgate-conversation")
		}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(rw, "tap: body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		tap.mu.Lock()
		tap.seen = append(tap.seen, tapped{Path: r.URL.Path, Body: body})
		i := len(tap.seen) - 1
		tap.mu.Unlock()
		proxy.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), tapKey{}, i)))
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	tap.url = srv.URL
	return tap
}

type tapKey struct{}

// requests returns a copy of what the tap saw, oldest first.
func (tap *codexTap) requests() []tapped {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return append([]tapped(nil), tap.seen...)
}

// codexLong is one long Codex session: its directories, its configuration
// (the recipe with {{base}}) and the tap it talks through.
type codexLong struct {
	bin, home, codexHome, work, bindir string
	config                             string
	tap                                *codexTap
	sink                               *suiteWitness
	retries                            bool // Codex's default retries (else none)
}

// run runs one `codex exec --json [ARGS…] PROMPT` of the session and returns
// its JSON events and stderr.
func (c *codexLong) run(t *testing.T, prompt string, args ...string) ([]string, string) {
	t.Helper()
	config := "approval_policy = \"never\"\nsandbox_mode = \"read-only\"\n" + strings.Replace(c.config, "{{base}}", c.tap.url+"/v1", 1)
	if !c.retries {
		config += "request_max_retries = 0\nstream_max_retries = 0\n"
	}
	if err := os.WriteFile(filepath.Join(c.codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	argv := append([]string{"exec", "--skip-git-repo-check", "--json"}, args...)
	cmd := exec.CommandContext(ctx, c.bin, append(argv, prompt)...)
	cmd.Dir = c.work
	cmd.Env = append(c.sink.env(), "HOME="+c.home, "CODEX_HOME="+c.codexHome, "PMGATE_TEST_KEY="+testKey,
		"PATH="+c.bindir+string(os.PathListSeparator)+os.Getenv("PATH"), "RUST_LOG=error", "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // the events say what happened
	var events []string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "{") {
			events = append(events, line)
		}
	}
	return events, stderr.String()
}

// writeValueCommand puts value-cmd on the session's PATH: the command the
// emulator asks Codex's exec_command tool to run (its "cmd" built from the
// schema). It prints as many bytes as the file "size" in its directory says.
func (c *codexLong) writeValueCommand(t *testing.T) {
	t.Helper()
	script := `#!/bin/sh
dir=$(dirname "$0")
n=$(cat "$dir/size")
head -c "$n" /dev/zero | tr '\0' 'v'
echo
`
	if err := os.WriteFile(filepath.Join(c.bindir, "value-cmd"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// size sets how many bytes value-cmd prints from now on.
func (c *codexLong) size(t *testing.T, n int) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(c.bindir, "size"), []byte(fmt.Sprint(n)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// codexLongSession is issue 34's long session with the real Codex CLI.
func codexLongSession(t *testing.T, bin, recipe, st string, sink *suiteWitness) {
	emu := newEmulator(t)
	s := serveWith(t, emu, st, nil)
	tap := newCodexTap(t, s.base)
	c := &codexLong{bin: bin, home: t.TempDir(), codexHome: t.TempDir(), work: t.TempDir(), bindir: t.TempDir(),
		config: "model_auto_compact_token_limit = 6000\n" + recipe, tap: tap, sink: sink}
	c.writeValueCommand(t)
	if err := os.WriteFile(filepath.Join(c.home, ".bash_profile"), []byte("export PATH="+c.bindir+":$PATH\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.size(t, 25000)
	prompts := []string{"Turn one. #usage=conversation #scenario=usage_last #approval_after=5 #loop=2", "Turn two. #loop=2", "Turn three. #loop=1", "Turn four. #loop=0"}
	for i, p := range prompts {
		var args []string
		if i > 0 {
			args = []string{"resume", "--last"}
		}
		events, stderr := c.run(t, p, args...)
		t.Logf("turn %d events:\n%s\nstderr:\n%s", i+1, strings.Join(events, "\n"), stderr)
	}
	if dir := os.Getenv("PMGATE_CODEX_DUMP"); dir != "" {
		for i, r := range tap.requests() {
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%02d-%d.json", st, i, r.Status)), r.Body, 0o644)
		}
		var b strings.Builder
		for _, r := range emu.Requests() {
			fmt.Fprintf(&b, "%s turn=%d q=%d rej=%v refusal=%s\n", r.ChatType, r.Turn, queryChars(r), r.Rejected, r.Refusal)
		}
		_ = os.WriteFile(filepath.Join(dir, st+"-emu.txt"), []byte(b.String()), 0o644)
		_ = os.WriteFile(filepath.Join(dir, st+"-gateway.log"), []byte(s.logs.String()), 0o644)
	}
	_ = json.Valid
}
