package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Metric keys: one value per target and round.
func seqKey(kind int) string { return "seq/" + turnNames[kind] }

// Streams: "short" has shortEvents upstream events, "long" -long-events.
const (
	streamShort = "short"
	streamLong  = "long"
)

func streamKey(which, field string) string { return "stream/" + which + "/" + field }

// Stream fields.
const (
	fFirst    = "first_content"
	fLast     = "last_byte"
	fPerEvent = "per_event"
	// fMarginal is derived after the rounds: (last byte of the long stream −
	// last byte of the short one) ÷ (their difference in upstream events), the
	// cost of one more event that no coalescing of writes can hide.
	fMarginal = "marginal_per_event"
)

func sweepKey(kind, c int, field string) string {
	return fmt.Sprintf("sweep/%s/c%d/%s", turnNames[kind], c, field)
}

// Sweep fields.
const (
	fRPS    = "rps"
	fP50    = "p50"
	fP99    = "p99"
	fCPU    = "cpu"     // CPU of the process under test per exchange, µs
	fCPUEmu = "cpu_emu" // the emulator's
	fCPURig = "cpu_rig" // this driver's
	fCPUms  = "cpu_ms"  // CPU time of the process under test in the burst, ms
)

// results is everything the report needs.
type results struct {
	s        settings
	names    []string                        // targets, in report order
	values   map[string]map[string][]float64 // metric → target → per-round value (NaN: none)
	failures map[string]int                  // failed exchanges per target, warm-up included
	failMsgs []string                        // the first few failures
	orders   [][]string                      // per round: the target order of each phase
	// data events of one short and one long stream per target
	shortEvts, longEvts map[string]int
	idleRSS             map[string]int64 // KiB per process name
	peakRSS             map[string]int64 // VmHWM at the end of the rounds
	endRSS              map[string]int64
	clkTck              int64
	clkSrc              string
	loadPre, loadPost   string
	started             time.Time
	elapsed             time.Duration
	gwRoot, selfRoot    string
	gwRev               string
	baseRoot, baseRev   string // -base
	notes               []string
	// Per round: wall time, CPU used by processes other than the rig's (as a
	// share of all CPUs), and steal time (same unit).
	roundWall  []time.Duration
	foreignPct []float64
	stealPct   []float64
}

func newResults(r *rig) *results {
	return &results{s: r.s, names: r.names, values: map[string]map[string][]float64{}, failures: map[string]int{},
		shortEvts: map[string]int{}, longEvts: map[string]int{},
		idleRSS: r.idleRSS, peakRSS: map[string]int64{}, endRSS: map[string]int64{},
		clkTck: r.clkTck, clkSrc: r.clkSrc, loadPre: r.loadPre, started: r.started,
		gwRoot: r.gwRoot, selfRoot: r.selfRoot, gwRev: r.gwRev, baseRoot: r.baseRoot, baseRev: r.baseRev}
}

// set records the value of a metric for a target in a round (0-based); rounds
// without a value read NaN.
func (res *results) set(metric, target string, round int, v float64) {
	m := res.values[metric]
	if m == nil {
		m = map[string][]float64{}
		res.values[metric] = m
	}
	s := m[target]
	for len(s) <= round {
		s = append(s, math.NaN())
	}
	s[round] = v
	m[target] = s
}

func (res *results) get(metric, target string) []float64 { return res.values[metric][target] }

const maxFailMsgs = 8

func (res *results) fail(target string, n int, err error) {
	if n == 0 {
		return
	}
	res.failures[target] += n
	if len(res.failMsgs) < maxFailMsgs && err != nil {
		res.failMsgs = append(res.failMsgs, target+": "+err.Error())
	}
}

func (res *results) totalFailures() int {
	n := 0
	for _, v := range res.failures {
		n += v
	}
	return n
}

// phase is one measurement, run for every target in a fresh random order.
type phase struct {
	label string
	run   func(ctx context.Context, t *target, res *results, round int) error // error: the rig cannot go on
}

func (r *rig) phases() []phase {
	var ps []phase
	for _, kind := range []int{turnFresh, turnTool, turnContinued} {
		n := r.s.seq
		if kind != turnFresh {
			n = r.s.seqPairs
		}
		ps = append(ps, phase{"seq " + turnNames[kind], func(ctx context.Context, t *target, res *results, round int) error {
			lat, fails, err := r.sequential(ctx, t, kind, n)
			res.fail(t.name, fails, err)
			if len(lat) > 0 {
				res.set(seqKey(kind), t.name, round, micros(median(lat)))
			}
			return ctx.Err()
		}})
	}
	for _, st := range []struct {
		which  string
		events int
	}{{streamShort, shortEvents}, {streamLong, r.s.longEvents}} {
		ps = append(ps, phase{"stream " + st.which, func(ctx context.Context, t *target, res *results, round int) error {
			body := t.shortBody
			if st.which == streamLong {
				body = t.longBody
			}
			var first, last, per []float64
			fails := 0
			var lastErr error
			for i := 0; i < r.s.stream && fails < maxPhaseFailures; i++ {
				ss, err := t.stream(ctx, body)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					fails, lastErr = fails+1, err
					continue
				}
				first, last = append(first, micros(ss.firstContent)), append(last, micros(ss.lastByte))
				per = append(per, micros(ss.perEvent(st.events)))
			}
			res.fail(t.name, fails, lastErr)
			if len(first) > 0 {
				res.set(streamKey(st.which, fFirst), t.name, round, median(first))
				res.set(streamKey(st.which, fLast), t.name, round, median(last))
				res.set(streamKey(st.which, fPerEvent), t.name, round, median(per))
			}
			return nil
		}})
	}
	sweep := func(kind, c int) phase {
		return phase{fmt.Sprintf("sweep %s c=%d", turnNames[kind], c), func(ctx context.Context, t *target, res *results, round int) error {
			b, err := r.burst(ctx, t, kind, c, r.s.burstTime)
			if err != nil {
				return err
			}
			res.fail(t.name, b.fails, b.firstErr)
			if b.done == 0 {
				return nil
			}
			perExchange := func(ns int64) float64 { return float64(ns) / 1e3 / float64(b.done) }
			res.set(sweepKey(kind, c, fRPS), t.name, round, float64(b.done)/b.wall.Seconds())
			res.set(sweepKey(kind, c, fP50), t.name, round, micros(quantile(b.lat, 0.5)))
			res.set(sweepKey(kind, c, fP99), t.name, round, micros(quantile(b.lat, 0.99)))
			if t.server != nil {
				res.set(sweepKey(kind, c, fCPU), t.name, round, perExchange(b.serverCPU))
				res.set(sweepKey(kind, c, fCPUms), t.name, round, float64(b.serverCPU)/1e6)
			}
			res.set(sweepKey(kind, c, fCPUEmu), t.name, round, perExchange(b.emuCPU))
			res.set(sweepKey(kind, c, fCPURig), t.name, round, perExchange(b.rigCPU))
			return nil
		}}
	}
	for _, c := range r.s.sweep {
		ps = append(ps, sweep(turnFresh, c))
	}
	for _, c := range r.s.sweepOther {
		ps = append(ps, sweep(turnTool, c), sweep(turnContinued, c))
	}
	return ps
}

// maxPhaseFailures ends a sequential phase early: a target that fails this
// often is reported as failing, not measured further.
const maxPhaseFailures = 5

// measure runs the warm-up and the rounds.
func (r *rig) measure(ctx context.Context) (*results, error) {
	res := newResults(r)

	// Warm-up: check every answer once, open the keep-alive pools (client side
	// and upstream side); nothing is recorded.
	if err := r.verifyAll(ctx, res); err != nil {
		return nil, err
	}
	// A failure here is counted like any other (the answers were checked
	// above, so it is the load that fails).
	for _, name := range r.names {
		t := r.targets[name]
		for _, w := range []struct{ kind, n int }{{turnFresh, r.s.warmup}, {turnTool, r.s.warmup / 4}, {turnContinued, r.s.warmup / 4}} {
			_, fails, err := r.sequential(ctx, t, w.kind, w.n)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			res.fail(name, fails, wrap("warm-up", err))
		}
		b, err := r.burst(ctx, t, turnFresh, r.s.maxConcurrency(), min(r.s.burstTime, 300*time.Millisecond))
		if err != nil {
			return nil, fmt.Errorf("warm-up %s, burst: %w%s", name, err, r.diagnostics())
		}
		res.fail(name, b.fails, wrap("warm-up burst", b.firstErr))
	}
	logf(r.stderr, "warm-up done; %d rounds", r.s.rounds)

	phases := r.phases()
	for round := 0; round < r.s.rounds; round++ {
		sysBefore, err := r.sample()
		if err != nil {
			return nil, err
		}
		var orders []string
		if err := r.coldPass(ctx, res, round); err != nil {
			return nil, fmt.Errorf("round %d, cold pass: %w%s", round+1, err, r.diagnostics())
		}
		for _, ph := range phases {
			order := slices.Clone(r.names)
			rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			orders = append(orders, shortOrder(order))
			for _, name := range order {
				if err := r.alive(); err != nil {
					return nil, err
				}
				if err := ph.run(ctx, r.targets[name], res, round); err != nil {
					return nil, fmt.Errorf("round %d, %s, %s: %w%s", round+1, ph.label, name, err, r.diagnostics())
				}
			}
		}
		res.orders = append(res.orders, orders)
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
		res.stealPct = append(res.stealPct, 100*float64(sysAfter.steal-sysBefore.steal)/capacity)
		logf(r.stderr, "round %d/%d done in %s; CPU of other processes %.1f%%; failed exchanges so far %d", round+1, r.s.rounds,
			wall.Round(time.Millisecond), res.foreignPct[len(res.foreignPct)-1], res.totalFailures())
	}
	if err := r.alive(); err != nil {
		return nil, err
	}
	for _, p := range r.procs() {
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
	res.derive()
	res.loadPost = loadAvg()
	res.elapsed = time.Since(r.started)
	return res, nil
}

// derive adds the figures computed from others of the same round.
func (res *results) derive() {
	extra := float64(res.s.longEvents - shortEvents)
	for _, name := range res.names {
		per := paired(res.get(streamKey(streamLong, fLast), name), res.get(streamKey(streamShort, fLast), name),
			func(long, short float64) float64 { return (long - short) / extra })
		for round, v := range per {
			res.set(streamKey(streamLong, fMarginal), name, round, v)
		}
	}
}

// shortOrder is an order of targets as their initials: "hbg" for hop, hop-b, gateway.
func shortOrder(order []string) string {
	var b strings.Builder
	for _, n := range order {
		switch n {
		case nameHopB:
			b.WriteByte('b')
		case nameBase:
			b.WriteByte('B')
		default:
			b.WriteByte(n[0])
		}
	}
	return b.String()
}

func micros(d float64) float64 { return d / 1e3 } // ns → µs

// sequential runs n exchanges of a kind one after another and returns their
// timed latencies; it stops early after maxPhaseFailures failures (fails, and
// err the last of them).
func (r *rig) sequential(ctx context.Context, t *target, kind, n int) (lat []float64, fails int, err error) {
	lat = make([]float64, 0, n)
	var buf bytes.Buffer
	for i := 0; i < n && fails < maxPhaseFailures; i++ {
		d, _, e := t.exchange(ctx, kind, &buf)
		if e != nil {
			if ctx.Err() != nil {
				return lat, fails + 1, context.Cause(ctx)
			}
			fails, err = fails+1, e
			continue
		}
		lat = append(lat, d)
	}
	return lat, fails, err
}

// verifyAll checks once per target, outside any timing, that every kind of
// exchange and both streams are answered with exactly the emulator's text,
// and that the hops deliver the upstream events the report counts with.
func (r *rig) verifyAll(ctx context.Context, res *results) error {
	var longText string
	for _, name := range r.names {
		t := r.targets[name]
		var buf bytes.Buffer
		if _, err := t.roundTrip(ctx, t.freshBody, &buf); err != nil {
			return fmt.Errorf("%s: fresh turn: %w%s", name, err, r.diagnostics())
		}
		a, err := parseAnswer(t.proto, buf.Bytes())
		if err != nil {
			return fmt.Errorf("%s: fresh turn: %w", name, err)
		}
		if want := replyPrefix + seqQuery; a.text != want {
			return fmt.Errorf("%s: fresh turn answered %q, want %q", name, a.text, want)
		}
		if _, a, err = t.exchange(ctx, turnTool, &buf); err != nil {
			return fmt.Errorf("%s: tool round trip: %w%s", name, err, r.diagnostics())
		}
		if want := resultPrefix + toolName + "=" + toolResult; a.text != want {
			return fmt.Errorf("%s: tool round trip answered %q, want %q", name, a.text, want)
		}
		if _, _, err = t.exchange(ctx, turnContinued, &buf); err != nil {
			return fmt.Errorf("%s: continued turn: %w%s", name, err, r.diagnostics())
		}
		short, err := t.stream(ctx, t.shortBody)
		if err != nil {
			return fmt.Errorf("%s: short stream: %w", name, err)
		}
		if want := replyPrefix + seqQuery; short.text != want {
			return fmt.Errorf("%s: short stream answered %q, want %q", name, short.text, want)
		}
		long, err := t.stream(ctx, t.longBody)
		if err != nil {
			return fmt.Errorf("%s: long stream: %w", name, err)
		}
		if t.proto == protoUpstream {
			if short.events != shortEvents || long.events != r.s.longEvents {
				return fmt.Errorf("%s: the streams have %d and %d upstream events, want %d and %d (is the emulator the rig's own?)",
					name, short.events, long.events, shortEvents, r.s.longEvents)
			}
		}
		if longText == "" {
			longText = long.text
		} else if long.text != longText {
			return fmt.Errorf("%s: long stream answered %q, the first target %q", name, long.text, longText)
		}
		res.shortEvts[name], res.longEvts[name] = short.events, long.events
		if r.s.cold == 0 {
			continue
		}
		// The cold pass's turns: the same text, the events spaced.
		if _, err := t.roundTrip(ctx, t.coldBody, &buf); err != nil {
			return fmt.Errorf("%s: cold fresh turn: %w%s", name, err, r.diagnostics())
		}
		if a, err = parseAnswer(t.proto, buf.Bytes()); err != nil {
			return fmt.Errorf("%s: cold fresh turn: %w", name, err)
		}
		cold, err := t.stream(ctx, t.coldStreamBody)
		if err != nil {
			return fmt.Errorf("%s: cold stream: %w", name, err)
		}
		for _, got := range []string{a.text, cold.text} {
			if want := replyPrefix + coldQuery; got != want {
				return fmt.Errorf("%s: cold turn answered %q, want %q", name, got, want)
			}
		}
	}
	return nil
}

// --- the closed-loop burst ---------------------------------------------------

type burstResult struct {
	wall     time.Duration
	done     int // completed exchanges
	fails    int
	firstErr error
	lat      []float64
	// CPU time used during the burst, ns
	serverCPU int64
	emuCPU    int64
	rigCPU    int64
}

// burst runs c closed-loop workers, each sending exchanges of a kind one after
// another until d has passed, and reads the CPU time of the process under
// test, the emulator and this process before and after. A failed exchange is
// counted and the worker goes on.
func (r *rig) burst(ctx context.Context, t *target, kind, c int, d time.Duration) (burstResult, error) {
	var b burstResult
	// Let the previous phase's work (and any GC it started) finish first.
	if err := sleepCtx(ctx, 30*time.Millisecond); err != nil {
		return b, err
	}
	before, err := r.cpuTimes(t)
	if err != nil {
		return b, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for range c {
		wg.Go(func() {
			var buf bytes.Buffer
			lat := make([]float64, 0, 256)
			fails := 0
			var firstErr error
			for ctx.Err() == nil && time.Now().Before(deadline) {
				v, _, err := t.exchange(ctx, kind, &buf)
				if err != nil {
					if ctx.Err() == nil {
						fails++
						firstErr = cmpErr(firstErr, err)
						_ = sleepCtx(ctx, time.Millisecond) // no hot loop on a refusing target
					}
					continue
				}
				lat = append(lat, v)
			}
			mu.Lock()
			b.lat = append(b.lat, lat...)
			b.fails += fails
			b.firstErr = cmpErr(b.firstErr, firstErr)
			mu.Unlock()
		})
	}
	wg.Wait()
	b.wall = time.Since(start)
	b.done = len(b.lat)
	if err := context.Cause(ctx); err != nil {
		return b, err
	}
	if err := sleepCtx(ctx, 30*time.Millisecond); err != nil {
		return b, err
	}
	after, err := r.cpuTimes(t)
	if err != nil {
		return b, err
	}
	b.serverCPU, b.emuCPU, b.rigCPU = after[0]-before[0], after[1]-before[1], after[2]-before[2]
	return b, nil
}

// wrap prefixes a non-nil error.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// cmpErr keeps the first non-nil error.
func cmpErr(have, next error) error {
	if have != nil {
		return have
	}
	return next
}

// sysSample is the machine's CPU counters and the rig's own share of them.
type sysSample struct {
	at          time.Time
	busy, steal int64
	ours        int64 // the children + this process
}

func (r *rig) sample() (sysSample, error) {
	var s sysSample
	var err error
	s.at = time.Now()
	if s.busy, s.steal, err = systemTicks(); err != nil {
		return s, err
	}
	pids := []int{os.Getpid()}
	for _, p := range r.procs() {
		pids = append(pids, p.pid())
	}
	for _, pid := range pids {
		t, err := cpuTicks(pid)
		if err != nil {
			return s, err
		}
		s.ours += t
	}
	return s, nil
}

// cpuTimes reads the CPU time (ns) of the server under test (0 for direct),
// the emulator and this process.
func (r *rig) cpuTimes(t *target) ([3]int64, error) {
	var out [3]int64
	var err error
	if t.server != nil {
		if out[0], err = cpuNanos(t.server.pid(), r.clkTck); err != nil {
			return out, fmt.Errorf("%s CPU: %w", t.server.name, err)
		}
	}
	if out[1], err = cpuNanos(r.emu.pid(), r.clkTck); err != nil {
		return out, fmt.Errorf("emulator CPU: %w", err)
	}
	if out[2], err = cpuNanos(os.Getpid(), r.clkTck); err != nil {
		return out, fmt.Errorf("own CPU: %w", err)
	}
	return out, nil
}
