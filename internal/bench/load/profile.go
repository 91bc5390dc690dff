package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// perfConcurrency is the concurrency of the profiled burst (the c=16).
const perfConcurrency = 16

// profile records the gateway and then the hop with `perf record -g` during
// one extra burst each (not part of the measured rounds) and writes the
// hottest symbols of both to path (the raw data stays next to it, in
// path.gateway.perf.data and path.hop.perf.data). Neither binary serves /debug/pprof, so perf
// is the only profiler that can see them from outside.
func (r *rig) profile(ctx context.Context, path string) error {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return errors.New("perf is not installed")
	}
	var out bytes.Buffer
	d := max(r.s.burstTime, 2*time.Second)
	fmt.Fprintf(&out, "# perf profiles under one extra burst of fresh turns for %s at concurrency %d\n", d, perfConcurrency)
	fmt.Fprintf(&out, "# perf record -F 999 -g -p PID; perf report --stdio: self time (--no-children), then inclusive time (--children)\n")
	for _, name := range []string{nameGateway, nameHop} {
		t := r.targets[name]
		data := path + "." + name + ".perf.data" // kept, for `perf report -i` by hand
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		rec := exec.CommandContext(rctx, perf, "record", "-q", "-F", "999", "-g", "-o", data, "-p", strconv.Itoa(t.server.pid()))
		var recOut bytes.Buffer
		rec.Stdout, rec.Stderr = &recOut, &recOut
		rec.Cancel = func() error { return rec.Process.Signal(syscall.SIGINT) }
		rec.WaitDelay = 10 * time.Second
		if err := rec.Start(); err != nil {
			cancel()
			return fmt.Errorf("perf record: %w", err)
		}
		_ = sleepCtx(ctx, 300*time.Millisecond) // let perf attach
		_, berr := r.burst(ctx, t, turnFresh, perfConcurrency, d)
		_ = rec.Process.Signal(syscall.SIGINT)
		werr := rec.Wait()
		cancel()
		if berr != nil {
			return fmt.Errorf("burst under perf: %w", berr)
		}
		if _, err := os.Stat(data); err != nil {
			return fmt.Errorf("perf record wrote nothing (%v): %s", werr, strings.TrimSpace(recOut.String()))
		}
		for _, mode := range [][]string{
			{"--no-children", "--sort", "symbol", "--percent-limit", "0.7", "-g", "none"},
			{"--children", "--sort", "symbol", "--percent-limit", "2", "-g", "none"},
		} {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			args := append([]string{"report", "-i", data, "--stdio", "--no-demangle"}, mode...)
			rep := exec.CommandContext(rctx, perf, args...)
			var repOut, repErr bytes.Buffer
			rep.Stdout, rep.Stderr = &repOut, &repErr
			err := rep.Run()
			cancel()
			if err != nil {
				return fmt.Errorf("perf report: %v: %s", err, strings.TrimSpace(repErr.String()))
			}
			fmt.Fprintf(&out, "\n## %s — perf report %s\n\n", name, strings.Join(mode, " "))
			n := 0
			for line := range strings.SplitSeq(repOut.String(), "\n") {
				if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
					continue
				}
				out.WriteString(line + "\n")
				if n++; n >= 80 {
					break
				}
			}
		}
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}
