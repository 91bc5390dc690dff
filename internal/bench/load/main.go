// Command load is pmgate's load rig. It builds the gateway and the bare hop
// (internal/bench/hop), starts three processes on loopback ports — the
// emulator (`gateway emulator`), the hop and the gateway (`gateway serve`) —
// and measures three paths to the same emulator in one run:
//
//	direct   the client straight to the emulator (TLS)
//	hop      the client through a bare httputil.ReverseProxy (TLS to the emulator)
//	gateway  the client through pmgate (TLS to the emulator)
//
// Every round visits the three targets in a fresh random order and runs, per
// target: sequential small text turns (latency), streamed turns (time to the
// first event, cost of each further text chunk) and a burst at a fixed
// concurrency (CPU per request of the process under test, read from
// /proc/PID/stat). The report gives medians of per-round medians with their
// interquartile range, and judges the gateway against the hop.
//
// All traffic stays on 127.0.0.1; every loop is bounded in count, and the whole
// run in time (-timeout). The child processes are stopped at the end, on error
// and on SIGINT/SIGTERM. Linux only (/proc).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
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

var errUsage = errors.New("usage")

// settings are the parsed flags.
type settings struct {
	rounds      int
	seq         int
	stream      int
	burst       int
	concurrency int
	warmup      int
	hopMaxIdle  int
	out         string
	perf        string
	root        string
	quick       bool
	timeout     time.Duration
	connBurst   int
	maxConns    int
	settle      time.Duration
}

func parseFlags(args []string, stderr io.Writer) (settings, error) {
	var s settings
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&s.rounds, "rounds", 7, "rounds; each visits the three targets in a fresh random order")
	fs.IntVar(&s.seq, "seq", 200, "sequential small text turns per target per round")
	fs.IntVar(&s.stream, "stream", 50, "streamed turns per target per round")
	fs.IntVar(&s.burst, "burst", 2000, "requests of the concurrent burst per target per round")
	fs.IntVar(&s.concurrency, "concurrency", 64, "concurrency of the burst")
	fs.IntVar(&s.warmup, "warmup", 200, "unmeasured sequential turns per target before round 1 (plus one burst)")
	fs.IntVar(&s.hopMaxIdle, "hop-max-idle", 0, "idle upstream connections the hop keeps (0: 2×concurrency+16, enough for every burst connection; the gateway keeps 16)")
	fs.StringVar(&s.out, "out", "", "also write the Markdown report to this file")
	fs.StringVar(&s.perf, "perf", "", "after the rounds, profile the gateway and the hop under one extra burst each with perf (if installed) and write the top symbols to this file")
	fs.StringVar(&s.root, "root", "", "module root to build from (default: found from the working directory)")
	fs.BoolVar(&s.quick, "quick", false, "tiny counts for a smoke run (explicit flags still win)")
	fs.DurationVar(&s.timeout, "timeout", 10*time.Minute, "abort the whole run after this long")
	fs.IntVar(&s.connBurst, "conn-burst", 0, "instead of the rounds: open this many idle keep-alive connections to the gateway and report its RSS and descriptors during and after")
	fs.IntVar(&s.maxConns, "max-connections", 0, "MAX_CONNECTIONS of the gateway (0: its default)")
	fs.DurationVar(&s.settle, "settle", 30*time.Second, "with -conn-burst: how long to keep sampling after the clients closed")
	if err := fs.Parse(args); err != nil {
		return s, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return s, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if s.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quick := map[string]*int{"rounds": &s.rounds, "seq": &s.seq, "stream": &s.stream, "burst": &s.burst,
			"concurrency": &s.concurrency, "warmup": &s.warmup}
		values := map[string]int{"rounds": 2, "seq": 20, "stream": 5, "burst": 200, "concurrency": 16, "warmup": 20}
		for name, p := range quick {
			if !set[name] {
				*p = values[name]
			}
		}
		if !set["timeout"] {
			s.timeout = 3 * time.Minute
		}
	}
	bounds := []struct {
		name     string
		v, lo, h int
	}{
		{"rounds", s.rounds, 1, 50}, {"seq", s.seq, 1, 100000}, {"stream", s.stream, 1, 10000},
		{"burst", s.burst, 1, 1000000}, {"concurrency", s.concurrency, 1, 1024}, {"warmup", s.warmup, 0, 100000}, {"hop-max-idle", s.hopMaxIdle, 0, 4096},
		{"conn-burst", s.connBurst, 0, 10000}, {"max-connections", s.maxConns, 0, 65536},
	}
	for _, b := range bounds {
		if b.v < b.lo || b.v > b.h {
			return s, fmt.Errorf("%w: -%s must be in [%d, %d]", errUsage, b.name, b.lo, b.h)
		}
	}
	if s.timeout <= 0 || s.timeout > time.Hour {
		return s, fmt.Errorf("%w: -timeout must be in (0, 1h]", errUsage)
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
	return nil
}
