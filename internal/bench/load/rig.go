package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Target names, in report order.
const (
	nameDirect  = "direct"
	nameHop     = "hop"
	nameHopB    = "hop-b"
	nameGateway = "gateway"
	nameBase    = "base" // -base: a second gateway, from another tree
)

// rig is the running set of processes and the targets through them.
type rig struct {
	s        settings
	stderr   io.Writer
	dir      string
	stop     context.CancelFunc // stops the children
	emu      *proc
	hop      *proc
	hopB     *proc
	gw       *proc
	base     *proc    // -base
	names    []string // the targets, in report order
	targets  map[string]*target
	idleRSS  map[string]int64 // KiB, per process name, right after readiness
	clkTck   int64
	clkSrc   string
	started  time.Time
	loadPre  string
	selfRoot string // the rig's own tree: emulator and hops
	gwRoot   string // the tree of the gateway under test (-root)
	gwRev    string // its commit, when it is a git checkout
	baseRoot string // -base's tree and commit
	baseRev  string
	serial   atomic.Int64
}

var (
	emuOriginRE = regexp.MustCompile(`(?m)^\s*origin\s+(https://127\.0\.0\.1:[0-9]+)\s*$`)
	emuCARE     = regexp.MustCompile(`(?m)^\s*trust CA\s+(\S+)`)
	hopAddrRE   = regexp.MustCompile(`(?m)^hop listening (http://127\.0\.0\.1:[0-9]+)\s*$`)
)

// procs are the running children.
func (r *rig) procs() []*proc {
	var out []*proc
	for _, p := range []*proc{r.emu, r.hop, r.hopB, r.gw, r.base} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// startRig builds the binaries, starts emulator, both hops and the gateway,
// and waits until all of them answer.
func startRig(ctx context.Context, s settings, stderr io.Writer) (r *rig, err error) {
	self, err := moduleRoot("")
	if err != nil {
		return nil, err
	}
	gwRoot := self
	if s.root != "" {
		if gwRoot, err = moduleRoot(s.root); err != nil {
			return nil, err
		}
	}
	var baseRoot string
	if s.base != "" {
		if baseRoot, err = moduleRoot(s.base); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "pmgate-bench-")
	if err != nil {
		return nil, err
	}
	procCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r = &rig{s: s, stderr: stderr, dir: dir, stop: stop, targets: map[string]*target{}, idleRSS: map[string]int64{},
		started: time.Now(), loadPre: loadAvg(), selfRoot: self, gwRoot: gwRoot, gwRev: gitRevision(ctx, gwRoot), baseRoot: baseRoot}
	if baseRoot != "" {
		r.baseRev = gitRevision(ctx, baseRoot)
	}
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

	logf(stderr, "building ./cmd/gateway from %s, ./internal/bench/emu and ./internal/bench/hop from %s, into %s", gwRoot, self, dir)
	gwBin, emuBin, hopBin := filepath.Join(dir, "gateway"), filepath.Join(dir, "emu"), filepath.Join(dir, "hop")
	builds := []struct{ root, pkg, out string }{
		{gwRoot, "./cmd/gateway", gwBin}, {self, "./internal/bench/emu", emuBin}, {self, "./internal/bench/hop", hopBin},
	}
	baseBin := filepath.Join(dir, "gateway-base")
	if baseRoot != "" {
		logf(stderr, "building the base gateway from %s", baseRoot)
		builds = append(builds, struct{ root, pkg, out string }{baseRoot, "./cmd/gateway", baseBin})
	}
	for _, b := range builds {
		if err := goBuild(ctx, b.root, b.pkg, b.out); err != nil {
			return r, err
		}
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
	r.emu, err = startProc(procCtx, "emulator", emuBin, []string{"-addr", "127.0.0.1:0", "-workspace", benchWorkspace, "-slow-delay", s.coldEventGap.String()},
		append(base, "EMULATOR_ACCESS_TOKEN="+token), "")
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
	idle := 2*s.maxConcurrency() + 16
	directClient := newClient(idle, pool)
	if err := r.emu.waitReady(ctx, directClient, origin+"/_emulator/health"); err != nil {
		return r, err
	}

	// The hop and its A/A twin: the same binary, flags and environment.
	hopIdle := idle
	if s.hopMaxIdle > 0 {
		hopIdle = s.hopMaxIdle
	}
	startHop := func(name string) (*proc, string, *http.Client, error) {
		p, err := startProc(procCtx, name, hopBin,
			[]string{"-addr", "127.0.0.1:0", "-upstream", origin, "-ca", caFile, "-max-idle", strconv.Itoa(hopIdle)},
			append(base, "HOP_ACCESS_TOKEN="+token), "")
		if err != nil {
			return nil, "", nil, err
		}
		m, err := p.waitLine(ctx, hopAddrRE)
		if err != nil {
			return p, "", nil, err
		}
		c := newClient(idle, nil)
		return p, m[1], c, p.waitReady(ctx, c, m[1]+"/_emulator/health")
	}
	var hopURL, hopBURL string
	var hopClient, hopBClient *http.Client
	if r.hop, hopURL, hopClient, err = startHop(nameHop); err != nil {
		return r, err
	}
	if r.hopB, hopBURL, hopBClient, err = startHop(nameHopB); err != nil {
		return r, err
	}

	// Gateway: its default configuration except what the rig must set (see
	// docs/BENCHMARKS.md). Its log (INFO by default) goes to a file.
	apiKey := "sk-bench-" + randomHex(16)
	startGateway := func(name, bin string) (*proc, string, *http.Client, error) {
		port, err := freeLoopbackPort()
		if err != nil {
			return nil, "", nil, err
		}
		u := "http://127.0.0.1:" + strconv.Itoa(port)
		env := append(slices.Clone(base),
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
			"MAX_CONCURRENT_REQUESTS="+strconv.Itoa(s.gwMaxConcurrent()),
		)
		if s.maxConns > 0 {
			env = append(env, "MAX_CONNECTIONS="+strconv.Itoa(s.maxConns))
		}
		p, err := startProc(procCtx, name, bin, []string{"serve"}, env, filepath.Join(dir, name+".log"))
		if err != nil {
			return nil, "", nil, err
		}
		c := newClient(idle, nil)
		return p, u, c, p.waitReady(ctx, c, u+"/health")
	}
	gwURL, baseURL := "", ""
	var gwClient, baseClient *http.Client
	if r.gw, gwURL, gwClient, err = startGateway(nameGateway, gwBin); err != nil {
		return r, err
	}
	if baseRoot != "" {
		if r.base, baseURL, baseClient, err = startGateway(nameBase, baseBin); err != nil {
			return r, err
		}
	}
	for _, u := range []string{origin, hopURL, hopBURL, gwURL} {
		if err := requireLoopback(u); err != nil {
			return r, err
		}
	}

	// Idle memory: after start and one readiness probe, before any load.
	for _, p := range r.procs() {
		kib, err := statusKiB(p.pid(), "VmRSS")
		if err != nil {
			return r, fmt.Errorf("%s VmRSS: %w", p.name, err)
		}
		r.idleRSS[p.name] = kib
	}

	upHeader := http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}}
	gwHeader := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + apiKey}}
	upstream := func(name, base string, c *http.Client, h http.Header, server *proc) *target {
		return &target{name: name, proto: protoUpstream, url: base + "/_gw/chat", client: c, header: h, server: server,
			freshBody: userQuery(seqQuery, "", false), shortBody: userQuery(seqQuery, "", false),
			longBody: userQuery(longQuery(s.longEvents), "", false), toolBody: userQuery(toolQuery, "", true),
			coldBody: userQuery(coldQuery, "", false), coldStreamBody: userQuery(coldQuery, "", false), serial: &r.serial}
	}
	if s.direct {
		h := upHeader.Clone()
		h.Set("X-Access-Token", token)
		r.targets[nameDirect] = upstream(nameDirect, origin, directClient, h, nil)
		r.names = append(r.names, nameDirect)
	}
	r.targets[nameHop] = upstream(nameHop, hopURL, hopClient, upHeader, r.hop)
	r.targets[nameHopB] = upstream(nameHopB, hopBURL, hopBClient, upHeader, r.hopB)
	gateway := func(name, u string, c *http.Client, p *proc) *target {
		return &target{name: name, proto: protoOpenAI, url: u + "/v1/chat/completions",
			client: c, header: gwHeader, server: p,
			freshBody: openAIBody([]any{user(seqQuery)}, false, false), shortBody: openAIBody([]any{user(seqQuery)}, true, false),
			longBody: openAIBody([]any{user(longQuery(s.longEvents))}, true, false),
			toolBody: openAIBody([]any{user(toolQuery)}, false, true),
			coldBody: openAIBody([]any{user(coldQuery)}, false, false), coldStreamBody: openAIBody([]any{user(coldQuery)}, true, false),
			serial: &r.serial}
	}
	r.targets[nameGateway] = gateway(nameGateway, gwURL, gwClient, r.gw)
	r.names = append(r.names, nameHop, nameHopB, nameGateway)
	if r.base != nil {
		r.targets[nameBase] = gateway(nameBase, baseURL, baseClient, r.base)
		r.names = append(r.names, nameBase)
		logf(stderr, "base gateway %s (pid %d) from %s", baseURL, r.base.pid(), baseRoot)
	}
	logf(stderr, "ready: emulator %s (pid %d), hop %s (pid %d), hop-b %s (pid %d), gateway %s (pid %d)",
		origin, r.emu.pid(), hopURL, r.hop.pid(), hopBURL, r.hopB.pid(), gwURL, r.gw.pid())
	return r, nil
}

// close stops the children (SIGTERM, SIGKILL after stopGrace) and removes the
// temporary directory. It is safe to call more than once.
func (r *rig) close() {
	if r == nil {
		return
	}
	r.stop()
	for _, p := range r.procs() {
		select {
		case <-p.done:
		case <-time.After(stopGrace + 5*time.Second):
			_ = p.cmd.Process.Kill()
			logf(r.stderr, "%s did not stop; killed", p.name)
		}
		p.closeLog()
	}
	if r.s.gwLog != "" && r.gw != nil && r.gw.logPath != "" {
		if err := copyFile(r.gw.logPath, r.s.gwLog); err != nil {
			logf(r.stderr, "-gateway-log: %v", err)
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
	for _, p := range r.procs() {
		if p.exited() {
			return fmt.Errorf("%s exited during the run: %s", p.name, p.describe())
		}
	}
	return nil
}

// diagnostics is the output tail of every child, for an error message.
func (r *rig) diagnostics() string {
	var b strings.Builder
	for _, p := range r.procs() {
		if t := p.outputTail(); t != "" {
			b.WriteString("\n--- " + p.name + " output:\n" + t)
		}
	}
	return b.String()
}

func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "load: "+strings.TrimSuffix(format, "\n")+"\n", args...)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}
