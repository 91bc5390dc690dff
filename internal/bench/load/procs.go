package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	stopGrace      = 5 * time.Second  // SIGTERM, then SIGKILL after this
	readyTimeout   = 20 * time.Second // per process
	buildTimeout   = 5 * time.Minute
	benchModel     = "bench-model"
	benchEnum      = "GPT_55"
	benchWorkspace = "demo-workspace"
)

// proc is one child process.
type proc struct {
	name    string
	cmd     *exec.Cmd
	stdout  *lineBuffer
	stderr  *lineBuffer
	logPath string        // when set, stdout and stderr go to this file instead
	logFile *os.File      // open while the process runs
	done    chan struct{} // closed when the process has been waited for
	err     error         // Wait's error, valid after done
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// outputTail is the end of what the process wrote (its log file, or stderr
// then stdout).
func (p *proc) outputTail() string {
	if p.logPath != "" {
		return fileTail(p.logPath, 2000)
	}
	var b strings.Builder
	if t := p.stderr.tail(); t != "" {
		b.WriteString(t)
	}
	if t := p.stdout.tail(); t != "" {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(t)
	}
	return b.String()
}

// describe is the process's name, exit status and the tail of its output, for errors.
func (p *proc) describe() string {
	var b strings.Builder
	b.WriteString(p.name)
	if p.exited() {
		fmt.Fprintf(&b, " (exited: %v)", p.err)
	}
	if t := p.outputTail(); t != "" {
		b.WriteString("; output:\n" + t)
	}
	return b.String()
}

func (p *proc) closeLog() {
	if p.logFile != nil {
		_ = p.logFile.Close()
		p.logFile = nil
	}
}

// fileTail is the last n bytes of a file, trimmed; "" when it cannot be read.
func fileTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-n, 0)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if off > 0 {
		s = "…" + s
	}
	return s
}

// lineBuffer keeps the last 64 KiB written to it.
type lineBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const lineBufferMax = 64 << 10

func (l *lineBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - lineBufferMax; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
	}
	return len(p), nil
}

func (l *lineBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

func (l *lineBuffer) tail() string {
	s := strings.TrimSpace(l.String())
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}

// startProc starts path with args and exactly env (nothing is inherited);
// with logPath its stdout and stderr go to that file (a process that logs every
// request would otherwise make this process copy its log). The process gets
// SIGTERM when ctx ends (and SIGKILL stopGrace later), and SIGKILL if this
// process dies first.
func startProc(ctx context.Context, name, path string, args, env []string, logPath string) (*proc, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = env
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopGrace
	setDeathSignal(cmd)
	p := &proc{name: name, cmd: cmd, stdout: &lineBuffer{}, stderr: &lineBuffer{}, logPath: logPath, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("%s log: %w", name, err)
		}
		p.logFile = f
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		p.closeLog()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitLine waits until the process's stdout has a line matching re and returns
// the submatches.
func (p *proc) waitLine(ctx context.Context, re *regexp.Regexp) ([]string, error) {
	deadline := time.Now().Add(readyTimeout)
	for {
		if m := re.FindStringSubmatch(p.stdout.String()); m != nil {
			return m, nil
		}
		if p.exited() {
			return nil, fmt.Errorf("%s exited before printing its address: %s", p.name, p.describe())
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s printed no address within %s: %s", p.name, readyTimeout, p.describe())
		}
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// waitReady polls url with GET until it answers 200.
func (p *proc) waitReady(ctx context.Context, client *http.Client, u string) error {
	deadline := time.Now().Add(readyTimeout)
	var last error
	for {
		if p.exited() {
			return fmt.Errorf("%s exited before it was ready: %s", p.name, p.describe())
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				cancel()
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		cancel()
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready within %s (last: %v): %s", p.name, readyTimeout, last, p.describe())
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// moduleRoot finds the directory of pmgate's go.mod from dir ("": the working
// directory) upwards.
func moduleRoot(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			if m := modulePath(b); m != modulePMGate {
				return "", fmt.Errorf("%s/go.mod is module %q, not %s", dir, m, modulePMGate)
			}
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of " + modulePMGate + " above the working directory (use -root)")
		}
		dir = parent
	}
}

const modulePMGate = "github.com/pmgate/pmgate"

// modulePath is the path of a go.mod's module directive ("" when there is none).
func modulePath(gomod []byte) string {
	for line := range strings.SplitSeq(string(gomod), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// gitRevision is the short commit of a checkout, "+dirty" when its tracked
// files differ from it; "" when it is not a git checkout.
func gitRevision(ctx context.Context, dir string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	rev := strings.TrimSpace(string(out))
	if err := exec.CommandContext(ctx, "git", "-C", dir, "diff", "--quiet", "HEAD", "--").Run(); err != nil {
		rev += "+dirty"
	}
	return rev
}

// goBuild builds pkg (relative to root) into out.
func goBuild(ctx context.Context, root, pkg, out string) error {
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		if gr := os.Getenv("GOROOT"); gr != "" {
			goBin = filepath.Join(gr, "bin", "go")
		} else {
			return fmt.Errorf("go not found in PATH: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, pkg)
	cmd.Dir = root
	var outBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, strings.TrimSpace(outBuf.String()))
	}
	return nil
}

// freeLoopbackPort returns a port that was free a moment ago.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails
	return hex.EncodeToString(b)
}

// requireLoopback refuses any URL whose host is not a loopback IP.
func requireLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("refusing non-loopback URL %q", raw)
	}
	return nil
}

// newClient is a keep-alive client with room for every concurrent connection;
// pool, when set, is the only CA it trusts.
func newClient(idle int, pool *x509.CertPool) *http.Client {
	t := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:   false,
		DisableCompression:  true,
		MaxIdleConns:        idle,
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     5 * time.Minute,
		TLSHandshakeTimeout: 5 * time.Second,
	}
	if pool != nil {
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	}
	return &http.Client{Transport: t, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// --- /proc readers ---------------------------------------------------------

// cpuNanos is the CPU time of a process (all its threads), in ns: exact from
// its CPU-time clock, or utime+stime in clock ticks of clkTck per second
// where that clock cannot be read.
func cpuNanos(pid int, clkTck int64) (int64, error) {
	if ns, err := processCPUNanos(pid); err == nil {
		return ns, nil
	}
	t, err := cpuTicks(pid)
	return t * (1e9 / clkTck), err
}

// threadSleeps is how often the threads of a process have gone to sleep
// (voluntary_ctxt_switches of /proc/PID/task/*/status, summed): each is a
// wait that something later had to wake — a futex, epoll, a timer. Threads
// that exited are not counted; a Go program rarely ends one.
func threadSleeps(pid int) (int64, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/status")
		if err != nil {
			continue // the thread ended meanwhile
		}
		v, err := parseVoluntarySwitches(b)
		if err != nil {
			return 0, err
		}
		n += v
	}
	return n, nil
}

// parseVoluntarySwitches reads the voluntary_ctxt_switches line of a status file.
func parseVoluntarySwitches(b []byte) (int64, error) {
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("no voluntary_ctxt_switches in a task status")
}

// cpuTicks is utime+stime of a process (all its threads), in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads fields 14 (utime) and 15 (stime) of /proc/PID/stat. The
// command name (field 2) is in parentheses and may hold spaces and ')', so the
// fields are counted from the last ')'.
func parseStatCPU(b []byte) (int64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): utime is field 14 → f[11], stime field 15 → f[12].
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("malformed utime/stime in /proc stat")
	}
	return u + s, nil
}

// statusKiB reads a "Key:   123 kB" line of /proc/PID/status.
func statusKiB(pid int, key string) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != key {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("malformed %s line", key)
		}
		return strconv.ParseInt(fields[0], 10, 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", key, pid)
}

// clockTicks is the kernel's USER_HZ (what `getconf CLK_TCK` prints): from the
// auxiliary vector (AT_CLKTCK), else from getconf, else 100.
func clockTicks() (int64, string) {
	if b, err := os.ReadFile("/proc/self/auxv"); err == nil {
		const atClkTck = 17
		for i := 0; i+16 <= len(b); i += 16 { // 64-bit: (type, value) pairs of uint64
			typ := binary.NativeEndian.Uint64(b[i:])
			val := binary.NativeEndian.Uint64(b[i+8:])
			if typ == 0 {
				break
			}
			if typ == atClkTck && val > 0 && val < 1e6 {
				return int64(val), "auxv AT_CLKTCK"
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "getconf", "CLK_TCK").Output(); err == nil {
		if v, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && v > 0 {
			return v, "getconf CLK_TCK"
		}
	}
	return 100, "assumed"
}

// machine describes the host for the report.
func machine() (cpu string, ncpu int, kernel string) {
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "model name":
				if cpu == "" {
					cpu = strings.TrimSpace(v)
				}
			case "processor":
				ncpu++
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	return cpu, ncpu, kernel
}

// systemTicks reads the first line of /proc/stat: busy (user, nice, system)
// and steal, in clock ticks summed over all CPUs. irq and softirq time (where
// loopback networking is mostly accounted) is left out: it is nobody's process
// time, and most of it is the rig's own traffic.
func systemTicks() (busy, steal int64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, errors.New("malformed /proc/stat")
	}
	var v [8]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return 0, 0, errors.New("malformed /proc/stat")
		}
	}
	// user nice system idle iowait irq softirq steal
	return v[0] + v[1] + v[2], v[7], nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
