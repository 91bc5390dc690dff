package main

import (
	"cmp"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Target kinds: the upstream protocol (SSE of upstream events) or the OpenAI API.
const (
	kindUpstream = iota
	kindOpenAI
)

// Target names, in report order.
const (
	nameDirect  = "direct"
	nameHop     = "hop"
	nameGateway = "gateway"
)

var targetNames = []string{nameDirect, nameHop, nameGateway}

// target is one path to the emulator.
type target struct {
	name       string
	kind       int
	url        string
	client     *http.Client
	header     http.Header
	seqBody    []byte
	streamBody []byte
	server     *proc // the process under test (hop or gateway); nil for direct
}

// rig is the running set of processes and the targets through them.
type rig struct {
	s        settings
	stderr   io.Writer
	dir      string
	stop     context.CancelFunc // stops the children
	emu      *proc
	hop      *proc
	gw       *proc
	targets  map[string]*target
	idleRSS  map[string]int64 // KiB, per process name, right after readiness
	clkTck   int64
	clkSrc   string
	started  time.Time
	loadPre  string
	seqText  string // what the emulator answers to the small turn
	longText string // what it answers to the streamed turn
}

const (
	seqQuery = "hi"
	// streamQuery is 200 bytes: the emulator quotes at most 200 bytes of the
	// query, so the reply is 42+200 = 242 bytes, i.e. 11 text chunks of at most
	// 24 bytes. A longer prompt cannot give more chunks.
	streamQuery = "Please describe, in a few calm and ordinary sentences, how a request travels from a client " +
		"through a reverse proxy to an upstream server and back again, noting where latency gets added, and where not."
	replyPrefix = "Hello from the pmgate emulator. You said: "
)

var (
	emuOriginRE = regexp.MustCompile(`(?m)^\s*origin\s+(https://127\.0\.0\.1:[0-9]+)\s*$`)
	emuCARE     = regexp.MustCompile(`(?m)^\s*trust CA\s+(\S+)`)
	hopAddrRE   = regexp.MustCompile(`(?m)^hop listening (http://127\.0\.0\.1:[0-9]+)\s*$`)
)

// upstreamBody is the access_token chat body the gateway would send, as the
// emulator validates it (adapters/emulator/body.go).
func upstreamBody(query string) []byte {
	body := map[string]any{
		"input": map[string]any{
			"chatType": "USER_QUERY", "query": query, "conversationId": nil, "product": "workspace_v12",
			"useCase": nil, "agent": nil, "startedFrom": "CHAT_INPUT", "toolResponse": "",
		},
		"platform":          "WEB",
		"clientTools":       map[string]any{"native": []any{}},
		"clientKBTerms":     map[string]any{"native": []any{}},
		"mandatoryContext":  map[string]any{"workspaceId": benchWorkspace},
		"selectedContext":   []any{},
		"backgroundContext": []any{},
		"devModeOptions": map[string]any{
			"selectedModel": benchEnum, "isParallelToolCallingSupported": false, "autoRun": false,
			"supportsAskUser": false, "supportsActionRecommendations": false, "useThinkingModeIfAvailable": false,
		},
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return b
}

func openAIBody(query string, stream bool) []byte {
	body := map[string]any{
		"model":    benchModel,
		"messages": []any{map[string]any{"role": "user", "content": query}},
	}
	if stream {
		body["stream"] = true
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	b, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return b
}

// startRig builds the binaries, starts emulator, hop and gateway, and waits
// until all three answer.
func startRig(ctx context.Context, s settings, stderr io.Writer) (r *rig, err error) {
	root, err := moduleRoot(s.root)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pmgate-bench-")
	if err != nil {
		return nil, err
	}
	procCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r = &rig{s: s, stderr: stderr, dir: dir, stop: stop, targets: map[string]*target{}, idleRSS: map[string]int64{},
		started: time.Now(), loadPre: loadAvg()}
	defer func() {
		if err != nil {
			r.close()
			r = nil
		}
	}()
	// The children stop when ctx ends, too (interrupt, -timeout).
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-procCtx.Done():
		}
	}()
	r.clkTck, r.clkSrc = clockTicks()
	r.seqText, r.longText = replyPrefix+seqQuery, replyPrefix+streamQuery

	logf(stderr, "building ./cmd/gateway and ./internal/bench/hop in %s", dir)
	gwBin, hopBin := filepath.Join(dir, "gateway"), filepath.Join(dir, "hop")
	if err := goBuild(ctx, root, "./cmd/gateway", gwBin); err != nil {
		return r, err
	}
	if err := goBuild(ctx, root, "./internal/bench/hop", hopBin); err != nil {
		return r, err
	}

	// Children get exactly these variables; TMPDIR keeps the emulator's CA
	// directory inside ours, so it goes away with it.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return r, err
	}
	base := []string{"TMPDIR=" + tmp, "HOME=" + tmp, "PATH=/usr/bin:/bin"}
	token := "bench-" + randomHex(20)

	// Emulator.
	r.emu, err = startProc(procCtx, "emulator", gwBin, []string{"emulator", "--addr", "127.0.0.1:0"},
		append(base, "EMULATOR_ACCESS_TOKEN="+token, "EMULATOR_SESSION_COOKIE="+randomHex(24)))
	if err != nil {
		return r, err
	}
	m, err := r.emu.waitLine(ctx, emuOriginRE)
	if err != nil {
		return r, err
	}
	origin := m[1]
	if m, err = r.emu.waitLine(ctx, emuCARE); err != nil {
		return r, err
	}
	caFile := m[1]
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return r, fmt.Errorf("read the emulator CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return r, fmt.Errorf("the emulator CA file %s holds no certificate", caFile)
	}
	if err := requireLoopback(origin); err != nil {
		return r, err
	}
	idle := 2*s.concurrency + 16
	directClient := newClient(idle, pool)
	if err := r.emu.waitReady(ctx, directClient, origin+"/_emulator/health"); err != nil {
		return r, err
	}

	// Hop.
	hopIdle := idle
	if s.hopMaxIdle > 0 {
		hopIdle = s.hopMaxIdle
	}
	r.hop, err = startProc(procCtx, "hop", hopBin,
		[]string{"-addr", "127.0.0.1:0", "-upstream", origin, "-ca", caFile, "-max-idle", strconv.Itoa(hopIdle)},
		append(base, "HOP_ACCESS_TOKEN="+token))
	if err != nil {
		return r, err
	}
	if m, err = r.hop.waitLine(ctx, hopAddrRE); err != nil {
		return r, err
	}
	hopURL := m[1]
	hopClient := newClient(idle, nil)
	if err := r.hop.waitReady(ctx, hopClient, hopURL+"/_emulator/health"); err != nil {
		return r, err
	}

	// Gateway.
	port, err := freeLoopbackPort()
	if err != nil {
		return r, err
	}
	apiKey := "sk-bench-" + randomHex(16)
	gwURL := "http://127.0.0.1:" + strconv.Itoa(port)
	r.gw, err = startProc(procCtx, "gateway", gwBin, []string{"serve"}, append(base,
		"POSTMAN_TRANSPORT_STRATEGY=access_token",
		"POSTMAN_ORIGIN="+origin,
		"POSTMAN_ACCESS_TOKEN="+token,
		"POSTMAN_WORKSPACE_ID="+benchWorkspace,
		"PROVIDER_HOST=127.0.0.1",
		"PROVIDER_PORT="+strconv.Itoa(port),
		"PROVIDER_API_KEY="+apiKey,
		"PROVIDER_MODELS="+benchModel,
		"POSTMAN_MODEL_MAP="+benchModel+"="+benchEnum,
		"SSL_CERT_FILE="+caFile,
		"LOG_LEVEL=error",
		"MAX_CONCURRENT_REQUESTS=256",
		"MAX_CONNECTIONS="+strconv.Itoa(cmp.Or(s.maxConns, 256)),
	))
	if err != nil {
		return r, err
	}
	gwClient := newClient(idle, nil)
	if err := r.gw.waitReady(ctx, gwClient, gwURL+"/health"); err != nil {
		return r, err
	}
	for _, u := range []string{origin, hopURL, gwURL} {
		if err := requireLoopback(u); err != nil {
			return r, err
		}
	}

	// Idle memory: after start and one readiness probe, before any load.
	for _, p := range []*proc{r.emu, r.hop, r.gw} {
		kib, err := statusKiB(p.pid(), "VmRSS")
		if err != nil {
			return r, fmt.Errorf("%s VmRSS: %w", p.name, err)
		}
		r.idleRSS[p.name] = kib
	}

	upHeader := http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}
	directHeader := upHeader.Clone()
	directHeader.Set("X-Access-Token", token)
	gwHeader := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + apiKey}}
	seqUp, streamUp := upstreamBody(seqQuery), upstreamBody(streamQuery)
	r.targets[nameDirect] = &target{name: nameDirect, kind: kindUpstream, url: origin + "/_gw/chat",
		client: directClient, header: directHeader, seqBody: seqUp, streamBody: streamUp}
	r.targets[nameHop] = &target{name: nameHop, kind: kindUpstream, url: hopURL + "/_gw/chat",
		client: hopClient, header: upHeader, seqBody: seqUp, streamBody: streamUp, server: r.hop}
	r.targets[nameGateway] = &target{name: nameGateway, kind: kindOpenAI, url: gwURL + "/v1/chat/completions",
		client: gwClient, header: gwHeader, seqBody: openAIBody(seqQuery, false),
		streamBody: openAIBody(streamQuery, true), server: r.gw}
	logf(stderr, "ready: emulator %s (pid %d), hop %s (pid %d), gateway %s (pid %d)",
		origin, r.emu.pid(), hopURL, r.hop.pid(), gwURL, r.gw.pid())
	return r, nil
}

// close stops the children (SIGTERM, SIGKILL after stopGrace) and removes the
// temporary directory. It is safe to call more than once.
func (r *rig) close() {
	if r == nil {
		return
	}
	r.stop()
	for _, p := range []*proc{r.gw, r.hop, r.emu} {
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		case <-time.After(stopGrace + 5*time.Second):
			_ = p.cmd.Process.Kill()
			logf(r.stderr, "%s did not stop; killed", p.name)
		}
	}
	for _, t := range r.targets {
		t.client.CloseIdleConnections()
	}
	if r.dir != "" {
		_ = os.RemoveAll(r.dir)
		r.dir = ""
	}
}

// alive fails when a child has exited.
func (r *rig) alive() error {
	for _, p := range []*proc{r.emu, r.hop, r.gw} {
		if p.exited() {
			return fmt.Errorf("%s exited during the run: %s", p.name, p.describe())
		}
	}
	return nil
}

func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "load: "+strings.TrimSuffix(format, "\n")+"\n", args...)
}
