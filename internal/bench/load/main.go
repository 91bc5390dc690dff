// Command load is pmgate's load rig. It builds the gateway under test from
// -root and, from its own tree, the emulator (internal/bench/emu) and the bare
// hop (internal/bench/hop); it starts on loopback ports the emulator, two
// identical hops and the gateway (`gateway serve`, default configuration) and
// measures, in one run:
//
//	hop      the client through a bare httputil.ReverseProxy (TLS to the emulator)
//	hop-b    a second, identical hop: the A/A control (the floor of the noise)
//	gateway  the client through pmgate (TLS to the emulator)
//	direct   (with -direct) the client straight to the emulator
//	base     (with -base DIR) a second gateway, built from another tree
//
// Every round runs each measurement for every target in a fresh random order:
// sequential exchanges of three turn kinds (a fresh turn, a tool round trip, a
// continued conversation turn), streamed turns of 6 and of -long-events
// upstream events (first content, last byte, cost per further event), a
// closed-loop sweep at the concurrencies of -sweep (CPU per exchange of the
// process under test from its CPU-time clock, throughput, p50/p99), and a
// cold pass (cold.go): fresh and streamed turns, each after an idle gap, the
// targets interleaved, the upstream's events 2 ms apart. RSS idle and
// peak come from /proc/PID/status. The report gives medians of per-round
// values, every figure as gateway − hop (or ÷) beside the A/A floor hop-b − hop,
// paired per round, and judges the targets; -check judges instead
// only gross regressions and exits 1 on one (make bench-check, CI).
//
// All traffic stays on 127.0.0.1; every loop is bounded in count or time, and
// the whole run in time (-timeout). The child processes are stopped at the
// end, on error and on SIGINT/SIGTERM. Linux only (/proc).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

var (
	errUsage       = errors.New("usage")
	errCheckFailed = errors.New("regression check failed")
)

// settings are the parsed flags.
type settings struct {
	rounds, seq, seqPairs, stream int
	longEvents, warmup            int
	sweep, sweepOther             []int
	burstTime                     time.Duration
	direct                        bool
	gwConcurrent                  int
	hopMaxIdle                    int
	out, perf, root, gwLog        string
	quick                         bool
	timeout                       time.Duration
	connBurst, maxConns           int
	settle                        time.Duration
	check                         bool
	checkCPU, checkSeqUS          float64
	checkColdUS                   float64
	checkC                        int
	cold                          int           // cold requests of each kind per target per round (0: no cold pass)
	coldGap, coldEventGap         time.Duration // idle before each cold request; between the upstream's events in the cold pass
	base                          string        // module root of a second gateway measured beside the first ("": none)
}

// maxConcurrency is the highest concurrency of any sweep (at least 1).
func (s settings) maxConcurrency() int {
	return max(1, slices.Max(append(slices.Clone(s.sweep), s.sweepOther...)))
}

// gwMaxConcurrent is the gateway's MAX_CONCURRENT_REQUESTS: its default (16)
// refuses the excess with 429, so the sweep needs room above its highest
// concurrency (twice it: a slot is freed just after the client has read the
// answer).
func (s settings) gwMaxConcurrent() int {
	if s.gwConcurrent > 0 {
		return s.gwConcurrent
	}
	return max(16, 2*s.maxConcurrency())
}

// intList is a flag of comma-separated positive integers.
type intList struct{ v *[]int }

func (l intList) String() string {
	if l.v == nil {
		return ""
	}
	parts := make([]string, len(*l.v))
	for i, n := range *l.v {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

func (l intList) Set(s string) error {
	v, err := parseIntList(s)
	if err != nil {
		return err
	}
	*l.v = v
	return nil
}

// parseIntList reads "1,4,16" (no duplicates, each in [1, 1024]); "" is none.
func parseIntList(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("%q is not a concurrency in [1, 1024]", part)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("%d is listed twice", n)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseFlags(args []string, stderr io.Writer) (settings, error) {
	s := settings{sweep: []int{1, 4, 16, 64}, sweepOther: []int{16}}
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&s.rounds, "rounds", 15, "rounds; each runs every measurement for every target in a fresh random order (every paired figure, CPU ratios included, has one repetition per round)")
	fs.IntVar(&s.seq, "seq", 100, "sequential fresh turns per target per round")
	fs.IntVar(&s.seqPairs, "seq-pairs", 25, "sequential tool round trips, and as many continued turns, per target per round")
	fs.IntVar(&s.stream, "stream", 25, "streamed turns of each length per target per round")
	fs.IntVar(&s.cold, "cold", 20, "cold pass: fresh turns, and as many streamed turns, per target per round, each after an idle gap, the targets interleaved (0: no cold pass)")
	fs.DurationVar(&s.coldGap, "cold-gap", 7*time.Millisecond, "cold pass: the idle gap before each request")
	fs.DurationVar(&s.coldEventGap, "cold-event-gap", 2*time.Millisecond, "cold pass: the pause between the upstream's events")
	fs.StringVar(&s.base, "base", "", "module root of a second gateway (target \"base\") measured beside the first in the same rounds: a before/after in one run")
	fs.IntVar(&s.longEvents, "long-events", 50, "upstream events of the long stream (the short one has 6)")
	fs.Var(intList{&s.sweep}, "sweep", "concurrencies of the closed-loop sweep of fresh turns")
	fs.Var(intList{&s.sweepOther}, "sweep-other", "concurrencies of the sweep of tool round trips and continued turns (\"\": none)")
	fs.DurationVar(&s.burstTime, "burst-time", 500*time.Millisecond, "duration of each closed-loop burst of the sweep")
	fs.IntVar(&s.warmup, "warmup", 100, "unmeasured fresh turns per target before round 1 (a quarter as many of each other kind, plus one burst)")
	fs.BoolVar(&s.direct, "direct", false, "also measure the client straight to the emulator")
	fs.IntVar(&s.gwConcurrent, "gateway-max-concurrent", 0, "MAX_CONCURRENT_REQUESTS of the gateway (0: 2× the highest sweep concurrency, at least 16)")
	fs.IntVar(&s.hopMaxIdle, "hop-max-idle", 0, "idle upstream connections each hop keeps (0: 2×the highest concurrency+16)")
	fs.StringVar(&s.out, "out", "", "also write the Markdown report to this file")
	fs.StringVar(&s.perf, "perf", "", "after the rounds, profile the gateway and the hop under one extra burst each (fresh turns, c=16) with perf (if installed) and write the top symbols to this file")
	fs.StringVar(&s.gwLog, "gateway-log", "", "copy the gateway's log (stdout and stderr, INFO by default) to this file at the end")
	fs.StringVar(&s.root, "root", "", "module root of the gateway under test (default: the rig's own, found from the working directory)")
	fs.BoolVar(&s.quick, "quick", false, "tiny counts for a smoke run (explicit flags still win)")
	fs.DurationVar(&s.timeout, "timeout", 10*time.Minute, "abort the whole run after this long")
	fs.IntVar(&s.connBurst, "conn-burst", 0, "instead of the rounds: open this many idle keep-alive connections to the gateway and report its RSS and descriptors during and after")
	fs.IntVar(&s.maxConns, "max-connections", 0, "MAX_CONNECTIONS of the gateway (0: its default)")
	fs.DurationVar(&s.settle, "settle", 30*time.Second, "with -conn-burst: how long to keep sampling after the clients closed")
	fs.BoolVar(&s.check, "check", false, "judge gross regressions only (the thresholds below) and exit 1 on one; the report is printed either way")
	fs.Float64Var(&s.checkCPU, "check-cpu-ratio", 2.5, "with -check: fail when the gateway's CPU per fresh turn exceeds this many times the hop's at -check-concurrency")
	fs.Float64Var(&s.checkSeqUS, "check-seq-us", 500, "with -check: fail when a sequential fresh turn through the gateway takes more than this many µs longer than through the hop")
	fs.Float64Var(&s.checkColdUS, "check-cold-us", 1500, "with -check and a cold pass: fail when a cold sequential fresh turn through the gateway takes more than this many µs longer than through the hop")
	fs.IntVar(&s.checkC, "check-concurrency", 16, "with -check: the sweep concurrency the CPU ratio is judged at")
	if err := fs.Parse(args); err != nil {
		return s, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return s, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if s.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quick := map[string]*int{"rounds": &s.rounds, "seq": &s.seq, "seq-pairs": &s.seqPairs, "stream": &s.stream, "warmup": &s.warmup, "cold": &s.cold}
		values := map[string]int{"rounds": 2, "seq": 20, "seq-pairs": 5, "stream": 5, "warmup": 20, "cold": 5}
		for name, p := range quick {
			if !set[name] {
				*p = values[name]
			}
		}
		if !set["burst-time"] {
			s.burstTime = 200 * time.Millisecond
		}
		if !set["timeout"] {
			s.timeout = 3 * time.Minute
		}
	}
	bounds := []struct {
		name     string
		v, lo, h int
	}{
		{"rounds", s.rounds, 1, 50}, {"seq", s.seq, 1, 100000}, {"seq-pairs", s.seqPairs, 1, 100000}, {"stream", s.stream, 1, 10000},
		{"long-events", s.longEvents, shortEvents + 1, 1000 + framingEvents}, {"warmup", s.warmup, 0, 100000},
		{"gateway-max-concurrent", s.gwConcurrent, 0, 4096}, {"hop-max-idle", s.hopMaxIdle, 0, 4096},
		{"cold", s.cold, 0, 10000},
		{"conn-burst", s.connBurst, 0, 10000}, {"max-connections", s.maxConns, 0, 65536}, {"check-concurrency", s.checkC, 1, 1024},
	}
	for _, b := range bounds {
		if b.v < b.lo || b.v > b.h {
			return s, fmt.Errorf("%w: -%s must be in [%d, %d]", errUsage, b.name, b.lo, b.h)
		}
	}
	if s.timeout <= 0 || s.timeout > time.Hour {
		return s, fmt.Errorf("%w: -timeout must be in (0, 1h]", errUsage)
	}
	if s.burstTime < 10*time.Millisecond || s.burstTime > time.Minute {
		return s, fmt.Errorf("%w: -burst-time must be in [10ms, 1m]", errUsage)
	}
	if s.coldGap < time.Millisecond || s.coldGap > time.Second {
		return s, fmt.Errorf("%w: -cold-gap must be in [1ms, 1s]", errUsage)
	}
	if s.coldEventGap < time.Millisecond || s.coldEventGap > 100*time.Millisecond {
		return s, fmt.Errorf("%w: -cold-event-gap must be in [1ms, 100ms]", errUsage)
	}
	if len(s.sweep) == 0 {
		return s, fmt.Errorf("%w: -sweep needs at least one concurrency", errUsage)
	}
	if s.check {
		if !slices.Contains(s.sweep, s.checkC) {
			return s, fmt.Errorf("%w: -check judges the CPU ratio at concurrency %d, which -sweep must include", errUsage, s.checkC)
		}
		if s.checkCPU <= 1 || s.checkSeqUS <= 0 || s.checkColdUS <= 0 {
			return s, fmt.Errorf("%w: -check-cpu-ratio must be above 1, -check-seq-us and -check-cold-us above 0", errUsage)
		}
	}
	return s, nil
}

// run is the whole rig; main and the test call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	s, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.timeout, fmt.Errorf("the run exceeded -timeout %s", s.timeout))
	defer cancel()

	rig, err := startRig(ctx, s, stderr)
	if err != nil {
		return err
	}
	defer rig.close()

	if s.connBurst > 0 {
		report, err := rig.connBurst(ctx, s.connBurst, s.settle)
		if err != nil {
			return err
		}
		_, _ = io.WriteString(stdout, report)
		if s.out != "" {
			return os.WriteFile(s.out, []byte(report), 0o644)
		}
		return nil
	}

	res, err := rig.measure(ctx)
	if err != nil {
		if c := context.Cause(ctx); c != nil {
			return fmt.Errorf("%w (%v)", err, c)
		}
		return err
	}
	if s.perf != "" {
		if err := rig.profile(ctx, s.perf); err != nil {
			fmt.Fprintln(stderr, "load: profile skipped:", err)
			res.notes = append(res.notes, "perf profile skipped: "+err.Error())
		}
	}
	report := renderReport(res)
	if _, err := io.WriteString(stdout, report); err != nil {
		return err
	}
	if s.out != "" {
		if err := os.WriteFile(s.out, []byte(report), 0o644); err != nil {
			return fmt.Errorf("write -out: %w", err)
		}
	}
	if s.check {
		if failed := failedChecks(judgeCheck(res)); len(failed) > 0 {
			return fmt.Errorf("%w: %s", errCheckFailed, strings.Join(failed, "; "))
		}
	}
	return nil
}
