package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pmgate/pmgate/adapters/postman"
)

// TestColdWakes counts, instead of timing, what a cold request costs the
// gateway and the load rig's bare hop: with runtime/trace on, it sends
// PMGATE_WAKES_N (40) cold fresh turns and as many streamed ones (the rig's
// cold pass: an idle gap of 7 ms before each, the emulator's slow_stream
// scenario with its events 2 ms apart) through the gateway as `serve` wires it
// and through a hop built as internal/bench/hop builds it, both in this
// process, against the rig's emulator in a process of its own (so none of its
// goroutines is counted). The client is a bare connection read and written on
// the test goroutine, so it adds no goroutine either.
//
// For every target and kind it prints per request: goroutines created,
// goroutines made runnable by another (handoffs: each is a wake-up a cold
// process pays for) with the woken goroutine and what woke it, system calls,
// and Ps started from idle (a thread woken or started to run them). The
// difference between the gateway and the hop is the list of suspects for the
// cold pass's added latency. Counts, unlike times, hardly move with the
// machine's other load, so a change is measured by running this before and
// after it.
//
// It measures, it asserts nothing but that the requests succeed:
// PMGATE_WAKES=1 turns it on (it builds the emulator and needs `go tool
// trace`). PMGATE_WAKES_TOP sets how many rows of each breakdown it prints,
// PMGATE_WAKES_ONLY the one target to measure (hop or gateway), and
// PMGATE_WAKES_DIR a directory to keep the traces in (for `go tool trace`).
func TestColdWakes(t *testing.T) {
	if os.Getenv("PMGATE_WAKES") == "" {
		t.Skip("PMGATE_WAKES=1 counts the cold wake-ups (a measurement, not a test)")
	}
	n := envInt(t, "PMGATE_WAKES_N", 40)
	top := envInt(t, "PMGATE_WAKES_TOP", 12)
	dir := t.TempDir()
	traces := dir
	if d := os.Getenv("PMGATE_WAKES_DIR"); d != "" { // keep the traces there
		traces = d
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	// The rig's emulator, in a process of its own.
	emuBin := filepath.Join(dir, "emu")
	if out, err := exec.Command("go", "build", "-o", emuBin, "../../internal/bench/emu").CombinedOutput(); err != nil {
		t.Fatalf("build emu: %v\n%s", err, out)
	}
	const token, workspace = "token-wakes-0001", "demo-workspace"
	emu := exec.CommandContext(ctx, emuBin, "-addr", "127.0.0.1:0", "-workspace", workspace, "-slow-delay", "2ms")
	emu.Env = append(os.Environ(), "EMULATOR_ACCESS_TOKEN="+token)
	stdout, err := emu.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	emu.Stderr = os.Stderr
	if err := emu.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Process.Kill(); _ = emu.Wait() })
	var origin, caFile string
	sc := bufio.NewScanner(stdout)
	for (origin == "" || caFile == "") && sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "origin "); ok {
			origin = s
		} else if s, ok := strings.CutPrefix(sc.Text(), "trust CA "); ok {
			caFile = s
		}
	}
	if origin == "" || caFile == "" {
		t.Fatal("the emulator did not say where it listens")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)

	// The gateway, wired as `serve` wires it, in the rig's configuration:
	// its defaults (INFO logging, to a file) and what reaching the emulator
	// needs.
	env := map[string]string{
		"POSTMAN_TRANSPORT_STRATEGY": "access_token", "POSTMAN_ORIGIN": origin, "POSTMAN_ACCESS_TOKEN": token,
		"POSTMAN_WORKSPACE_ID": workspace, "PROVIDER_HOST": "127.0.0.1", "PROVIDER_PORT": "0",
		"PROVIDER_API_KEY": testKey, "PROVIDER_MODELS": "bench-model", "POSTMAN_MODEL_MAP": "bench-model=GPT_55",
		"MAX_CONCURRENT_REQUESTS": "128",
	}
	cfg, err := loadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "gateway.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logFile.Close() })
	gw, err := startGateway(ctx, cfg, newLogger(cfg, logFile), postman.WithRootCAs(pool))
	if err != nil {
		t.Fatal(err)
	}
	gwDone := make(chan error, 1)
	go func() { gwDone <- gw.wait(ctx) }()
	t.Cleanup(func() { cancel(); <-gwDone })

	// The hop: internal/bench/hop's ReverseProxy, with its settings.
	target, _ := url.Parse(origin)
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool},
		TLSHandshakeTimeout: 10 * time.Second, DisableCompression: true,
		MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second,
	}
	t.Cleanup(transport.CloseIdleConnections)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set("X-Access-Token", token)
		},
		Transport: transport, FlushInterval: -1,
	}
	hopLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hop := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		proxy.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
	go func() { _ = hop.Serve(hopLn) }()
	t.Cleanup(func() { _ = hop.Close() })

	// The rig's cold bodies (internal/bench/load: userQuery and openAIBody).
	const query = "hi #scenario=slow_stream"
	upstreamBody := `{"input":{"chatType":"USER_QUERY","query":"` + query + `","conversationId":null,"toolResponse":"",` +
		`"product":"workspace_v12","useCase":null,"agent":null,"startedFrom":"CHAT_INPUT"},"platform":"WEB",` +
		`"clientTools":{"native":[]},"clientKBTerms":{"native":[]},"mandatoryContext":{"workspaceId":"` + workspace + `"},` +
		`"selectedContext":[],"backgroundContext":[],"devModeOptions":{"selectedModel":"GPT_55",` +
		`"isParallelToolCallingSupported":false,"autoRun":false,"supportsAskUser":false,` +
		`"supportsActionRecommendations":false,"useThinkingModeIfAvailable":false}}`
	chat := func(stream bool) string {
		s := `{"model":"bench-model","messages":[{"role":"user","content":"` + query + `"}]`
		if stream {
			s += `,"stream":true,"stream_options":{"include_usage":true}`
		}
		return s + "}"
	}
	type kind struct {
		name, body string
		want       string // in every answer
	}
	targets := []struct {
		name, addr, path, header string
		kinds                    []kind
	}{
		{"hop", hopLn.Addr().String(), "/_gw/chat", "", []kind{
			{"fresh", upstreamBody, "textChunk"}, {"streamed", upstreamBody, "textChunk"}}},
		{"gateway", gw.addr(), "/v1/chat/completions", "Authorization: Bearer " + testKey + "\r\n", []kind{
			{"fresh", chat(false), `"finish_reason":"stop"`}, {"streamed", chat(true), "[DONE]"}}},
	}
	for _, tg := range targets {
		if only := os.Getenv("PMGATE_WAKES_ONLY"); only != "" && only != tg.name {
			continue
		}
		conn, err := net.Dial("tcp", tg.addr)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		do := func(k kind) {
			req := "POST " + tg.path + " HTTP/1.1\r\nHost: " + tg.addr + "\r\nContent-Type: application/json\r\n" + tg.header +
				"Content-Length: " + strconv.Itoa(len(k.body)) + "\r\n\r\n" + k.body
			if err := wakesClientWrite(conn, req); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || !bytes.Contains(b, []byte(k.want)) {
				t.Fatalf("%s: %d %v %s", tg.name, resp.StatusCode, err, b)
			}
		}
		for _, k := range tg.kinds {
			for range 20 { // warm: connections made, pools filled
				do(k)
			}
			runtime.GC()
			time.Sleep(100 * time.Millisecond)
			file := filepath.Join(traces, tg.name+"-"+k.name+".trace")
			f, err := os.Create(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := trace.Start(f); err != nil {
				t.Fatal(err)
			}
			for range n {
				time.Sleep(7 * time.Millisecond)
				do(k)
			}
			trace.Stop()
			_ = f.Close()
			c, err := countTrace(file)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", c.report(tg.name+", cold "+k.name+" turn", n, top))
		}
		_ = conn.Close()
	}
}

// wakesClientWrite sends a request: the trace's mark of a request's start.
func wakesClientWrite(conn net.Conn, req string) error {
	_, err := io.WriteString(conn, req)
	return err
}

func envInt(t *testing.T, name string, def int) int {
	if s := os.Getenv(name); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("%s=%q", name, s)
		}
		return v
	}
	return def
}

// traceCounts are the events of one trace that a cold process pays for.
type traceCounts struct {
	created, unblocked, syscalls, procStarts int
	byCreated, byUnblock, bySyscall          map[string]int
	// The critical path of each request, in µs of the traced process:
	// from the client's write to the upstream request handed to the
	// transport's writer (before), and from the upstream body's end to the
	// next write to the client (after). Tracing slows both; compare the
	// gateway with the hop of the same run, not with the rig's figures.
	before, after []float64
	// event: from a goroutine woken by the network poller (the upstream's
	// next bytes) to its write to the client, for every such write after
	// the dispatch and before the upstream's end; first: the first one of
	// each request (a stream's first content on the gateway, which writes
	// nothing before it; on the hop its response header, which its handler
	// writes when the transport's reader hands it over: read "every one").
	event, first []float64
}

// request is one request's marks in a trace (ns, the trace's clock).
type request struct {
	sent, dispatched, upstreamEnd int64
	wrote                         bool
}

// countTrace reads a trace through `go tool trace -d=parsed`, whose text is
// one event per line ("M=.. P=.. G=.. StateTransition ... GoID=7
// Waiting->Runnable Reason=..."), each followed by its stacks ("Stack=" or
// "TransitionStack=", one "\tfunc @ pc" line and one file line per frame,
// ended by a blank line).
func countTrace(file string) (*traceCounts, error) {
	cmd := exec.Command("go", "tool", "trace", "-d=parsed", file)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &traceCounts{byCreated: map[string]int{}, byUnblock: map[string]int{}, bySyscall: map[string]int{}}
	label := map[string]string{} // goroutine id → what it runs (its outermost own frame)
	type event struct {
		g, goID, trans, proc string
		at                   int64
		stack, tstack        []string
	}
	has := func(stack []string, fn string) bool {
		return slices.ContainsFunc(stack, func(f string) bool { return strings.Contains(f, fn) })
	}
	var req *request
	polled := map[string]int64{} // goroutine → when the poller last made it runnable
	var ev *event
	var cur *[]string
	flush := func() {
		if ev == nil {
			return
		}
		e := ev
		ev = nil
		if e.g != "-1" && e.g != "" && label[e.g] == "" && len(e.stack) > 0 {
			label[e.g] = outermost(e.stack)
		}
		client := has(e.stack, "wakesClientWrite")
		if strings.HasPrefix(e.trans, "Waiting->Runnable") && e.g == "-1" {
			polled[e.goID] = e.at
		}
		if req != nil && req.dispatched != 0 && req.upstreamEnd == 0 && !client && strings.HasPrefix(e.trans, "Running->Syscall") &&
			has(e.stack, "net.(*conn).Write") && polled[e.g] != 0 && !has(e.stack, "writeLoop") {
			d := float64(e.at-polled[e.g]) / 1e3
			c.event = append(c.event, d)
			if !req.wrote {
				c.first, req.wrote = append(c.first, d), true
			}
			delete(polled, e.g)
		}
		switch {
		case strings.HasPrefix(e.trans, "Running->Syscall") && client && has(e.stack, "net.(*conn).Write"):
			req = &request{sent: e.at}
		case req == nil:
		case req.dispatched == 0 && strings.HasPrefix(e.trans, "Waiting->Runnable") && has(e.stack, "net/http.(*persistConn).roundTrip"):
			req.dispatched = e.at
			c.before = append(c.before, float64(req.dispatched-req.sent)/1e3)
		case req.dispatched != 0 && strings.HasPrefix(e.trans, "Waiting->Runnable") && has(e.stack, "bodyEOFSignal"):
			req.upstreamEnd = e.at
		case req.upstreamEnd != 0 && strings.HasPrefix(e.trans, "Running->Syscall") && !client && has(e.stack, "net.(*conn).Write"):
			c.after = append(c.after, float64(e.at-req.upstreamEnd)/1e3)
			req = nil
		}
		switch {
		case e.proc != "" && strings.HasPrefix(e.trans, "Idle->Running"):
			c.procStarts++
		case e.goID == "":
		case strings.HasPrefix(e.trans, "NotExist->Runnable"):
			c.created++
			l := "?"
			if len(e.tstack) > 0 {
				l = e.tstack[0]
			}
			label[e.goID] = l
			c.byCreated[l+"  ← by "+own(e.stack)]++
		case strings.HasPrefix(e.trans, "Waiting->Runnable"):
			c.unblocked++
			by := "the scheduler (netpoll, timer)"
			if e.g != "-1" {
				by = own(e.stack)
			}
			w := label[e.goID]
			if w == "" {
				w = "g" + e.goID
			}
			c.byUnblock[w+"  ← by "+by]++
		case strings.HasPrefix(e.trans, "Running->Syscall"):
			c.syscalls++
			c.bySyscall[own(e.stack)]++
		}
		if (strings.HasPrefix(e.trans, "Undetermined->") || strings.HasPrefix(e.trans, "Running->Waiting")) &&
			label[e.goID] == "" && len(e.stack) > 0 {
			label[e.goID] = outermost(e.stack)
		}
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "M="):
			flush()
			ev = &event{}
			for _, f := range strings.Fields(line) {
				switch {
				case strings.HasPrefix(f, "G="):
					ev.g = f[2:]
				case strings.HasPrefix(f, "Time="):
					ev.at, _ = strconv.ParseInt(f[5:], 10, 64)
				case strings.HasPrefix(f, "GoID="):
					ev.goID = f[5:]
				case strings.HasPrefix(f, "ProcID="):
					ev.proc = f[7:]
				case strings.Contains(f, "->"):
					ev.trans = f
				}
			}
			if !strings.Contains(line, "StateTransition") {
				ev.trans = ""
			}
		case ev == nil:
		case line == "Stack=":
			cur = &ev.stack
		case line == "TransitionStack=":
			cur = &ev.tstack
		case strings.HasPrefix(line, "\t\t"):
		case strings.HasPrefix(line, "\t") && cur != nil:
			fn, _, _ := strings.Cut(strings.TrimPrefix(line, "\t"), " @ ")
			*cur = append(*cur, fn)
		}
	}
	flush()
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("go tool trace: %w", err)
	}
	return c, sc.Err()
}

// own is the innermost frame of a stack that is not the runtime's, the
// standard library's synchronisation or the trace's, with its caller: what
// did it.
func own(stack []string) string {
	for i, f := range stack {
		if skipFrame(f) {
			continue
		}
		if i+1 < len(stack) {
			return f + " < " + stack[i+1]
		}
		return f
	}
	return "runtime"
}

func outermost(stack []string) string {
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i] != "runtime.goexit" && !strings.HasPrefix(stack[i], "runtime.main") {
			return stack[i]
		}
	}
	return "?"
}

func skipFrame(f string) bool {
	for _, p := range []string{"runtime.", "internal/", "sync.", "syscall.", "context.", "time.", "os.(*File)", "os.(*file)"} {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return false
}

func (c *traceCounts) report(title string, n, top int) string {
	var b strings.Builder
	per := func(v int) string { return strconv.FormatFloat(float64(v)/float64(n), 'f', 2, 64) }
	fmt.Fprintf(&b, "== %s: per request (%d requests): goroutines created %s, made runnable %s, syscalls %s, Ps started %s\n",
		title, n, per(c.created), per(c.unblocked), per(c.syscalls), per(c.procStarts))
	fmt.Fprintf(&b, "  critical path, traced, µs median [Q1 – Q3]: request sent → upstream request handed to its writer %s;"+
		" upstream body's end → next write to the client %s\n", quartiles(c.before), quartiles(c.after))
	fmt.Fprintf(&b, "  woken by the upstream's bytes → write to the client, µs: the request's first %s; every one %s\n",
		quartiles(c.first), quartiles(c.event))
	for _, part := range []struct {
		name string
		m    map[string]int
	}{{"created", c.byCreated}, {"made runnable", c.byUnblock}, {"syscalls", c.bySyscall}} {
		keys := make([]string, 0, len(part.m))
		for k := range part.m {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			if part.m[a] != part.m[b] {
				return part.m[b] - part.m[a]
			}
			return strings.Compare(a, b)
		})
		fmt.Fprintf(&b, "  %s:\n", part.name)
		for i, k := range keys {
			if i == top {
				break
			}
			fmt.Fprintf(&b, "    %6s  %s\n", per(part.m[k]), k)
		}
	}
	return b.String()
}

func quartiles(v []float64) string {
	if len(v) == 0 {
		return "–"
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return fmt.Sprintf("%.0f [%.0f – %.0f] (n=%d)", v[len(v)/2], v[len(v)/4], v[3*len(v)/4], len(v))
}
