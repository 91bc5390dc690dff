package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// TestTheBodysWay measures the way of a chat and a Messages request's body
// from net/http to the domain request (docs/ARCHITECTURE.md, "The body's
// way"), from stack captures: while this goroutine serves the same request
// over and over to a service that refuses at once, another one captures
// every goroutine's stack (runtime.Stack) as often as it can. The stacks of
// the serving goroutine that pass through the body's read or the route's
// decode are the body's; their frames in this module (tests aside) make a
// call tree, each function's callees ordered by the line they are called
// from. The way is that tree walked in order, at the scale of files: a stop
// is a stay in one file, and a return is a stop in a file the way had left
// before. The returns after the domain request is whole are not counted.
//
// It takes seconds, so it runs only with PMGATE_WALK=1:
//
//	PMGATE_WALK=1 go test -count=1 -run TestTheBodysWay -v ./adapters/httpapi/
func TestTheBodysWay(t *testing.T) {
	if os.Getenv("PMGATE_WALK") == "" {
		t.Skip("set PMGATE_WALK=1 to measure the body's way (seconds)")
	}
	for _, c := range []struct {
		name, decode string
		req          *http.Request
	}{
		{"chat completions", `handleChat.func1`, chatRequest(walkChatBody)},
		{"Messages", `handleMessages.func1`, msgRequest(walkMessagesBody)},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			way := bodysWay(t, c.req, c.decode)
			stops, returns := count(way.files())
			pstops, preturns := count(packages(way.files()))
			t.Logf("%s: %d stops, %d returns to a file already left; at the scale of packages %d stops, %d returns (%d stacks)\n%s",
				c.name, stops, returns, pstops, preturns, way.samples, way.String())
			is.True(stops > 3) // the way was seen: transport, the API's decode, the wire read
		})
	}
}

// walkChatBody is an agent's chat request: a system prompt, a tool round
// (a call and its result) and two tools.
const walkChatBody = `{"model":"` + model + `","stream":true,"messages":[` +
	`{"role":"system","content":"You are a coding agent."},` +
	`{"role":"user","content":"Read main.go"},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"main.go\"}"}}]},` +
	`{"role":"tool","tool_call_id":"call_1","content":"package main"},` +
	`{"role":"user","content":"Now explain it."}],` +
	`"tools":[{"type":"function","function":{"name":"read","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},` +
	`{"type":"function","function":{"name":"write","description":"Write a file","parameters":{"type":"object","properties":{"path":{"type":"string"},"text":{"type":"string"}},"required":["path","text"]}}}]}`

// walkMessagesBody is the same conversation as Claude Code sends it.
const walkMessagesBody = `{"model":"` + model + `","max_tokens":1024,"stream":true,` +
	`"system":[{"type":"text","text":"You are a coding agent."}],"messages":[` +
	`{"role":"user","content":[{"type":"text","text":"Read main.go"}]},` +
	`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"main.go"}}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"package main"},{"type":"text","text":"Now explain it."}]}],` +
	`"tools":[{"name":"read","description":"Read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}},` +
	`{"name":"write","description":"Write a file","input_schema":{"type":"object","properties":{"path":{"type":"string"},"text":{"type":"string"}},"required":["path","text"]}}]}`

// refusingService refuses every turn after checking it got a request: the
// way ends where the domain request reaches the service.
type refusingService struct{ seen atomic.Int64 }

func (s *refusingService) Chat(_ context.Context, _ app.Principal, req chat.Request, _ *app.Repeat) (app.Turn, error) {
	if len(req.Messages) > 0 {
		s.seen.Add(1)
	}
	return nil, errs.New(errs.UpstreamUnavailable)
}

// frame is one frame of a captured stack: its function, file and line.
type frame struct {
	fn, file string
	line     int
}

// callNode is a function on the body's way, called from a line of its
// caller.
type callNode struct {
	frame    frame
	children map[string]*callNode // by call line and callee
	order    []*callNode
	site     int // the caller's line that calls it
}

func (n *callNode) child(f frame, site int) *callNode {
	k := strconv.Itoa(site) + " " + f.fn
	if c, ok := n.children[k]; ok {
		return c
	}
	c := &callNode{frame: f, children: map[string]*callNode{}, site: site}
	n.children[k] = c
	n.order = append(n.order, c)
	return c
}

// way is the body's call tree, rooted above the first frame of this module.
type way struct {
	root    *callNode
	samples int
	root0   string // the module's directory, cut from file names
}

// files walks the tree in the order of the calls: each function's file on
// entry and again on each return from a callee that more calls follow.
func (w *way) files() []string {
	var seq []string
	var visit func(n *callNode)
	visit = func(n *callNode) {
		seq = append(seq, n.frame.file)
		kids := slices.Clone(n.order)
		slices.SortStableFunc(kids, func(a, b *callNode) int { return a.site - b.site })
		for i, k := range kids {
			visit(k)
			if i < len(kids)-1 {
				seq = append(seq, n.frame.file)
			}
		}
	}
	for _, k := range w.root.order {
		visit(k)
	}
	// Collapse the stays in one file.
	var stops []string
	for _, f := range seq {
		if len(stops) == 0 || stops[len(stops)-1] != f {
			stops = append(stops, f)
		}
	}
	return stops
}

// packages is a way of files at the scale of their directories, the stays
// in one collapsed.
func packages(files []string) []string {
	var out []string
	for _, f := range files {
		d := filepath.Dir(f)
		if len(out) == 0 || out[len(out)-1] != d {
			out = append(out, d)
		}
	}
	return out
}

// count is a way's stops and its returns to a place already left.
func count(way []string) (stops, returns int) {
	seen := map[string]bool{}
	for _, f := range way {
		stops++
		if seen[f] {
			returns++
		}
		seen[f] = true
	}
	return stops, returns
}

func (w *way) String() string {
	var b strings.Builder
	seen := map[string]bool{}
	for i, f := range w.files() {
		mark := ""
		if seen[f] {
			mark = "  (return)"
		}
		seen[f] = true
		fmt.Fprintf(&b, "  %2d. %s%s\n", i+1, f, mark)
	}
	var tree func(n *callNode, depth int)
	tree = func(n *callNode, depth int) {
		kids := slices.Clone(n.order)
		slices.SortStableFunc(kids, func(a, b *callNode) int { return a.site - b.site })
		for _, k := range kids {
			fmt.Fprintf(&b, "  %s%s  (%s, called from line %d)\n", strings.Repeat("  ", depth), k.frame.fn, k.frame.file, k.site)
			tree(k, depth+1)
		}
	}
	b.WriteString("  call tree:\n")
	tree(w.root, 1)
	return b.String()
}

// bodysWay serves req over and over while capturing stacks, and builds the
// way from those that pass through the body's read or decode (a function
// whose name ends in decode).
func bodysWay(t *testing.T, req *http.Request, decode string) *way {
	t.Helper()
	body, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	svc := &refusingService{}
	cfg := func(c *httpapi.Config) { c.MaxTools, c.MaxBodyBytes = 64, 1<<20 }
	h := httpapi.NewServer(func() httpapi.Config { c := testConfig(); cfg(&c); return c }(),
		svc, slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})))
	modDir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	w := &way{root: &callNode{children: map[string]*callNode{}}, root0: modDir + "/"}

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1<<20)
		for {
			select {
			case <-stop:
				return
			default:
			}
			n := runtime.Stack(buf, true)
			w.add(buf[:n], decode)
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		r.ContentLength = int64(len(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != http.StatusServiceUnavailable && rec.Code != http.StatusBadGateway && rec.Code < 500 {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	close(stop)
	<-done
	if svc.seen.Load() == 0 {
		t.Fatal("the service never saw a request")
	}
	return w
}

var frameFile = regexp.MustCompile(`^\t(.+\.go):(\d+)`)

// add reads one runtime.Stack dump and adds the serving goroutine's stack
// when it is on the body's way.
func (w *way) add(dump []byte, decode string) {
	for _, g := range strings.Split(string(dump), "\n\n") {
		if !strings.Contains(g, "(*server).middleware") {
			continue
		}
		var frames []frame
		sc := bufio.NewScanner(strings.NewReader(g))
		var fn string
		for sc.Scan() {
			line := sc.Text()
			if m := frameFile.FindStringSubmatch(line); m != nil && fn != "" {
				n, _ := strconv.Atoi(m[2])
				frames = append(frames, frame{fn: fn, file: m[1], line: n})
				fn = ""
				continue
			}
			if strings.HasPrefix(line, "goroutine ") || strings.HasPrefix(line, "created by ") {
				fn = ""
				continue
			}
			if i := strings.LastIndex(line, "("); i > 0 {
				fn = line[:i]
			}
		}
		slices.Reverse(frames) // outermost first
		onWay := false
		for _, f := range frames {
			if strings.HasSuffix(f.fn, decode) || strings.HasSuffix(f.fn, ".readJSON") {
				onWay = true
			}
		}
		if !onWay {
			continue
		}
		w.samples++
		n := w.root
		site := 0
		for _, f := range frames {
			if !strings.HasPrefix(f.file, w.root0) || strings.HasSuffix(f.file, "_test.go") {
				// A library's frame: its callees in this module are still
				// called from the last frame of ours.
				continue
			}
			f.file = strings.TrimPrefix(f.file, w.root0)
			n = n.child(f, site)
			site = f.line
		}
	}
}
