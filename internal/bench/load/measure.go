package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Metric names (per target, one value per round).
const (
	mSeq       = "seq_us"         // median latency of a sequential small text turn
	mFirst     = "first_event_us" // median time to the first data event of a streamed turn
	mFirstText = "first_text_us"  // median time to the first text chunk of a streamed turn
	mPerChunk  = "per_chunk_us"   // median time per further text chunk
	mLast      = "last_event_us"  // median time to the last data event ([DONE])
	mBurstRPS  = "burst_rps"      // completed requests per second in the burst
	mBurstP50  = "burst_p50_us"   // median latency in the burst
	mBurstP99  = "burst_p99_us"   // 99th percentile latency in the burst
	mCPUServer = "cpu_server_us"  // CPU of the process under test per burst request
	mCPUEmu    = "cpu_emu_us"     // CPU of the emulator per burst request
	mCPURig    = "cpu_rig_us"     // CPU of this load driver (the client) per burst request
	mCPUTicks  = "cpu_server_ticks"
)

// results is everything the report needs.
type results struct {
	s          settings
	values     map[string]map[string][]float64 // metric → target → per-round value
	orders     [][]string
	textChunks int
	streamEvts map[string]int // data events of one streamed turn, per target
	idleRSS    map[string]int64
	peakRSS    map[string]int64 // VmHWM at the end of the rounds
	endRSS     map[string]int64
	clkTck     int64
	clkSrc     string
	loadPre    string
	loadPost   string
	started    time.Time
	elapsed    time.Duration
	notes      []string
	// Per round: wall time, CPU used by processes other than the rig's four
	// (as a share of all CPUs), and steal time (same unit).
	roundWall  []time.Duration
	foreignPct []float64
	stealPct   []float64
	ncpu       int
}

func (res *results) add(metric, target string, v float64) {
	m := res.values[metric]
	if m == nil {
		m = map[string][]float64{}
		res.values[metric] = m
	}
	m[target] = append(m[target], v)
}

// measure runs the warm-up and the rounds.
func (r *rig) measure(ctx context.Context) (*results, error) {
	res := &results{s: r.s, values: map[string]map[string][]float64{}, streamEvts: map[string]int{},
		idleRSS: r.idleRSS, peakRSS: map[string]int64{}, endRSS: map[string]int64{},
		clkTck: r.clkTck, clkSrc: r.clkSrc, loadPre: r.loadPre, started: r.started}

	// Warm-up: open the keep-alive pools (client side and upstream side) and
	// check every answer once; nothing is recorded.
	for _, name := range targetNames {
		t := r.targets[name]
		if err := r.verify(ctx, t, res); err != nil {
			return nil, err
		}
		if _, err := r.sequential(ctx, t, r.s.warmup); err != nil {
			return nil, fmt.Errorf("warm-up %s: %w", name, err)
		}
		if _, err := r.burst(ctx, t, min(r.s.burst, 4*r.s.concurrency)); err != nil {
			return nil, fmt.Errorf("warm-up %s: %w", name, err)
		}
	}
	logf(r.stderr, "warm-up done; %d rounds", r.s.rounds)

	for round := 1; round <= r.s.rounds; round++ {
		sysBefore, err := r.sample()
		if err != nil {
			return nil, err
		}
		order := slices.Clone(targetNames)
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		res.orders = append(res.orders, order)
		for _, name := range order {
			if err := r.alive(); err != nil {
				return nil, err
			}
			if err := r.roundFor(ctx, r.targets[name], res); err != nil {
				return nil, fmt.Errorf("round %d, %s: %w%s", round, name, err, r.diagnostics())
			}
		}
		sysAfter, err := r.sample()
		if err != nil {
			return nil, err
		}
		wall := sysAfter.at.Sub(sysBefore.at)
		capacity := wall.Seconds() * float64(r.clkTck) * float64(runtime.NumCPU())
		foreign := float64((sysAfter.busy - sysBefore.busy) - (sysAfter.ours - sysBefore.ours))
		res.roundWall = append(res.roundWall, wall)
		// Clamped at 0: the system-wide counters are tick-sampled while the
		// per-process ones are exact, so a quiet machine reads a few percent
		// below zero. The figure is a detector of other load, not a measurement.
		res.foreignPct = append(res.foreignPct, 100*max(foreign, 0)/capacity)
		if foreign < 0 {
			logf(r.stderr, "round %d: other-load counter %.1f%% (counter noise), reported as 0", round, 100*foreign/capacity)
		}
		res.stealPct = append(res.stealPct, 100*float64(sysAfter.steal-sysBefore.steal)/capacity)
		logf(r.stderr, "round %d/%d done in %s (%s); CPU of other processes %.1f%%", round, r.s.rounds,
			wall.Round(time.Millisecond), strings.Join(order, ", "), res.foreignPct[len(res.foreignPct)-1])
	}
	if err := r.alive(); err != nil {
		return nil, err
	}
	for _, p := range []*proc{r.emu, r.hop, r.gw} {
		hwm, err := statusKiB(p.pid(), "VmHWM")
		if err != nil {
			return nil, fmt.Errorf("%s VmHWM: %w", p.name, err)
		}
		rss, err := statusKiB(p.pid(), "VmRSS")
		if err != nil {
			return nil, fmt.Errorf("%s VmRSS: %w", p.name, err)
		}
		res.peakRSS[p.name], res.endRSS[p.name] = hwm, rss
	}
	res.loadPost = loadAvg()
	res.elapsed = time.Since(r.started)
	return res, nil
}

// roundFor runs one target's share of a round: sequential turns, streamed
// turns, then the burst.
func (r *rig) roundFor(ctx context.Context, t *target, res *results) error {
	lat, err := r.sequential(ctx, t, r.s.seq)
	if err != nil {
		return fmt.Errorf("sequential: %w", err)
	}
	res.add(mSeq, t.name, micros(median(lat)))

	first := make([]float64, 0, r.s.stream)
	firstText := make([]float64, 0, r.s.stream)
	perChunk := make([]float64, 0, r.s.stream)
	last := make([]float64, 0, r.s.stream)
	for i := 0; i < r.s.stream; i++ {
		st, err := r.streamOnce(ctx, t)
		if err != nil {
			return fmt.Errorf("stream: %w", err)
		}
		first = append(first, micros(st.first))
		firstText = append(firstText, micros(st.firstText))
		perChunk = append(perChunk, micros(st.perChunk))
		last = append(last, micros(st.last))
	}
	res.add(mFirst, t.name, median(first))
	res.add(mFirstText, t.name, median(firstText))
	res.add(mPerChunk, t.name, median(perChunk))
	res.add(mLast, t.name, median(last))

	b, err := r.burst(ctx, t, r.s.burst)
	if err != nil {
		return fmt.Errorf("burst: %w", err)
	}
	res.add(mBurstRPS, t.name, float64(r.s.burst)/b.wall.Seconds())
	res.add(mBurstP50, t.name, micros(quantile(b.lat, 0.5)))
	res.add(mBurstP99, t.name, micros(quantile(b.lat, 0.99)))
	perReq := func(ticks int64) float64 {
		return float64(ticks) / float64(r.clkTck) * 1e6 / float64(r.s.burst)
	}
	if t.server != nil {
		res.add(mCPUServer, t.name, perReq(b.serverTicks))
		res.add(mCPUTicks, t.name, float64(b.serverTicks))
	}
	res.add(mCPUEmu, t.name, perReq(b.emuTicks))
	res.add(mCPURig, t.name, perReq(b.rigTicks))
	return nil
}

func micros(d float64) float64 { return d / 1e3 } // ns → µs

// --- one request -----------------------------------------------------------

func (t *target) newRequest(ctx context.Context, body []byte) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		panic(err) // the URL was built by the rig
	}
	req.Header = t.header.Clone()
	return req
}

// once sends a small text turn and reads the answer to EOF into buf; it
// returns the latency in ns (request written → last byte read).
func (t *target) once(ctx context.Context, buf *bytes.Buffer) (float64, error) {
	req := t.newRequest(ctx, t.seqBody)
	start := time.Now()
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, err
	}
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d: %.300s", resp.StatusCode, buf.Bytes())
	}
	// A cheap completeness check on every answer; verify checks the content.
	var ok bool
	if t.kind == kindUpstream {
		ok = bytes.HasSuffix(buf.Bytes(), []byte("data: [DONE]\n\n"))
	} else {
		ok = bytes.Contains(buf.Bytes(), []byte(`"finish_reason":"stop"`))
	}
	if !ok {
		return 0, fmt.Errorf("incomplete answer: %.300s", buf.Bytes())
	}
	return float64(d.Nanoseconds()), nil
}

func (r *rig) sequential(ctx context.Context, t *target, n int) ([]float64, error) {
	lat := make([]float64, 0, n)
	var buf bytes.Buffer
	for i := 0; i < n; i++ {
		d, err := t.once(ctx, &buf)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
	}
	return lat, nil
}

// streamStats are the timings of one streamed turn, in ns from the request.
type streamStats struct {
	first     float64 // first data event fully read
	firstText float64 // first text chunk fully read
	perChunk  float64 // (last text − first text) / (text chunks − 1)
	last      float64 // last data event ([DONE]) fully read
	chunks    int     // text chunks
	events    int     // data events (including [DONE])
	text      string  // concatenated text
}

type stamped struct {
	at   time.Duration
	line []byte
}

// streamOnce sends the long streamed turn and stamps every data line as it is
// read; parsing happens after the stream ends, so it does not skew the stamps.
func (r *rig) streamOnce(ctx context.Context, t *target) (streamStats, error) {
	var st streamStats
	req := t.newRequest(ctx, t.streamBody)
	lines := make([]stamped, 0, 24)
	start := time.Now()
	resp, err := t.client.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return st, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return st, fmt.Errorf("content type %q", ct)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && bytes.HasPrefix(line, []byte("data:")) {
			lines = append(lines, stamped{at: time.Since(start), line: bytes.Clone(line)})
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, err
		}
		if len(lines) > 10000 {
			return st, errors.New("more than 10000 events")
		}
	}
	return analyzeStream(t.kind, lines)
}

func analyzeStream(kind int, lines []stamped) (streamStats, error) {
	var st streamStats
	if len(lines) == 0 {
		return st, errors.New("no data events")
	}
	st.events = len(lines)
	st.first = float64(lines[0].at.Nanoseconds())
	st.last = float64(lines[len(lines)-1].at.Nanoseconds())
	if last := bytes.TrimSpace(lines[len(lines)-1].line); string(last) != "data: [DONE]" {
		return st, fmt.Errorf("the stream did not end with [DONE]: %.200s", last)
	}
	var text strings.Builder
	var firstAt, lastAt time.Duration
	for _, l := range lines {
		payload := bytes.TrimSpace(bytes.TrimPrefix(l.line, []byte("data:")))
		if string(payload) == "[DONE]" {
			continue
		}
		piece, err := textOf(kind, payload)
		if err != nil {
			return st, err
		}
		if piece == "" {
			continue
		}
		if st.chunks == 0 {
			firstAt = l.at
		}
		lastAt = l.at
		st.chunks++
		text.WriteString(piece)
	}
	if st.chunks < 2 {
		return st, fmt.Errorf("only %d text chunks", st.chunks)
	}
	st.firstText = float64(firstAt.Nanoseconds())
	st.perChunk = float64((lastAt - firstAt).Nanoseconds()) / float64(st.chunks-1)
	st.text = text.String()
	return st, nil
}

// textOf extracts the text of one event: textChunk.textContent upstream,
// choices[0].delta.content on the OpenAI side.
func textOf(kind int, payload []byte) (string, error) {
	if kind == kindUpstream {
		var ev struct {
			EventType string `json:"eventType"`
			Data      struct {
				TextContent string `json:"textContent"`
			} `json:"data"`
		}
		if err := json.Unmarshal(payload, &ev); err != nil {
			return "", fmt.Errorf("bad upstream event: %v", err)
		}
		if ev.EventType == "failure" {
			return "", fmt.Errorf("upstream failure event: %.300s", payload)
		}
		if ev.EventType != "textChunk" {
			return "", nil
		}
		return ev.Data.TextContent, nil
	}
	var ch struct {
		Error   json.RawMessage `json:"error"`
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(payload, &ch); err != nil {
		return "", fmt.Errorf("bad chunk: %v", err)
	}
	if ch.Error != nil {
		return "", fmt.Errorf("error event: %.300s", payload)
	}
	if len(ch.Choices) == 0 {
		return "", nil // the usage chunk
	}
	return ch.Choices[0].Delta.Content, nil
}

// verify checks once, outside any timing, that the target answers both turns
// with exactly the emulator's text.
func (r *rig) verify(ctx context.Context, t *target, res *results) error {
	var buf bytes.Buffer
	if _, err := t.once(ctx, &buf); err != nil {
		return fmt.Errorf("%s: small turn: %w", t.name, err)
	}
	var got string
	if t.kind == kindUpstream {
		var lines []stamped
		for line := range bytes.SplitAfterSeq(buf.Bytes(), []byte("\n")) {
			if bytes.HasPrefix(line, []byte("data:")) {
				lines = append(lines, stamped{line: line})
			}
		}
		var text strings.Builder
		for _, l := range lines {
			payload := bytes.TrimSpace(bytes.TrimPrefix(l.line, []byte("data:")))
			if string(payload) == "[DONE]" {
				continue
			}
			piece, err := textOf(kindUpstream, payload)
			if err != nil {
				return fmt.Errorf("%s: small turn: %w", t.name, err)
			}
			text.WriteString(piece)
		}
		got = text.String()
	} else {
		var c struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(buf.Bytes(), &c); err != nil || len(c.Choices) != 1 {
			return fmt.Errorf("%s: small turn: unexpected answer %.300s", t.name, buf.Bytes())
		}
		got = c.Choices[0].Message.Content
	}
	if got != r.seqText {
		return fmt.Errorf("%s: small turn answered %q, want %q", t.name, got, r.seqText)
	}
	st, err := r.streamOnce(ctx, t)
	if err != nil {
		return fmt.Errorf("%s: streamed turn: %w", t.name, err)
	}
	if st.text != r.longText {
		return fmt.Errorf("%s: streamed turn answered %q, want %q", t.name, st.text, r.longText)
	}
	if res.textChunks != 0 && res.textChunks != st.chunks {
		res.notes = append(res.notes, fmt.Sprintf("%s streams %d text chunks, others %d", t.name, st.chunks, res.textChunks))
	}
	res.textChunks = st.chunks
	res.streamEvts[t.name] = st.events
	return nil
}

// --- the burst ---------------------------------------------------------------

type burstResult struct {
	wall        time.Duration
	lat         []float64
	serverTicks int64
	emuTicks    int64
	rigTicks    int64
}

// burst sends n small text turns from r.s.concurrency keep-alive workers and
// reads the CPU ticks of the server under test, the emulator and this process
// before and after.
func (r *rig) burst(ctx context.Context, t *target, n int) (burstResult, error) {
	var b burstResult
	c := min(r.s.concurrency, n)
	// Let the previous phase's work (and any GC it started) finish first.
	if err := sleepCtx(ctx, 30*time.Millisecond); err != nil {
		return b, err
	}
	before, err := r.ticks(t)
	if err != nil {
		return b, err
	}
	lat := make([]float64, n)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < c; w++ {
		wg.Go(func() {
			var buf bytes.Buffer
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || bctx.Err() != nil {
					return
				}
				d, err := t.once(bctx, &buf)
				if err != nil {
					if failed.CompareAndSwap(nil, &err) {
						cancel()
					}
					return
				}
				lat[i] = d
			}
		})
	}
	wg.Wait()
	b.wall = time.Since(start)
	if p := failed.Load(); p != nil {
		return b, *p
	}
	if err := sleepCtx(ctx, 30*time.Millisecond); err != nil {
		return b, err
	}
	after, err := r.ticks(t)
	if err != nil {
		return b, err
	}
	b.serverTicks, b.emuTicks, b.rigTicks = after[0]-before[0], after[1]-before[1], after[2]-before[2]
	b.lat = lat
	return b, nil
}

// diagnostics is the output tail of every child, for an error message.
func (r *rig) diagnostics() string {
	var b strings.Builder
	for _, p := range []*proc{r.emu, r.hop, r.gw} {
		if t := p.stderr.tail(); t != "" {
			b.WriteString("\n--- " + p.name + " stderr:\n" + t)
		}
	}
	return b.String()
}

// sysSample is the machine's CPU counters and the rig's own share of them.
type sysSample struct {
	at          time.Time
	busy, steal int64
	ours        int64 // emulator + hop + gateway + this process
}

func (r *rig) sample() (sysSample, error) {
	var s sysSample
	var err error
	s.at = time.Now()
	if s.busy, s.steal, err = systemTicks(); err != nil {
		return s, err
	}
	for _, pid := range []int{r.emu.pid(), r.hop.pid(), r.gw.pid(), os.Getpid()} {
		t, err := cpuTicks(pid)
		if err != nil {
			return s, err
		}
		s.ours += t
	}
	return s, nil
}

// ticks reads utime+stime of the server under test (0 for direct), the
// emulator and this process.
func (r *rig) ticks(t *target) ([3]int64, error) {
	var out [3]int64
	var err error
	if t.server != nil {
		if out[0], err = cpuTicks(t.server.pid()); err != nil {
			return out, fmt.Errorf("%s CPU: %w", t.server.name, err)
		}
	}
	if out[1], err = cpuTicks(r.emu.pid()); err != nil {
		return out, fmt.Errorf("emulator CPU: %w", err)
	}
	if out[2], err = cpuTicks(os.Getpid()); err != nil {
		return out, fmt.Errorf("own CPU: %w", err)
	}
	return out, nil
}
