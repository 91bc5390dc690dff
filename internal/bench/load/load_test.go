package main

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestQuickRun runs the whole rig with -quick: build, three processes, two
// rounds of tiny counts, the report. It is opt-in (PMGATE_BENCH=1) so that
// `go test ./...` stays fast; the measured numbers are not judged here.
func TestQuickRun(t *testing.T) {
	if os.Getenv("PMGATE_BENCH") != "1" {
		t.Skip("set PMGATE_BENCH=1 to run the load rig smoke test")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the load rig reads /proc")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	out := t.TempDir() + "/report.md"
	var stdout, stderr bytes.Buffer
	// -check with thresholds no timing noise reaches: only a failed exchange
	// (or a figure that could not be measured) fails the run here.
	args := []string{"-quick", "-check", "-check-cpu-ratio", "1000", "-check-seq-us", "1e6", "-check-cold-us", "1e6", "-out", out}
	if err := run(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	if report != stdout.String() {
		t.Error("-out differs from stdout")
	}
	for _, want := range []string{
		"## Regression check",
		"## Targets (gateway against the bare hop, with the A/A floor)",
		"sequential fresh turn: added latency",
		"streamed turn, 6 events: first content, added",
		"streamed turn, 6 events: last byte, added",
		"streamed turn, 50 events: each further event, added",
		"CPU per request at c=1", "CPU per request at c=64", "throughput at c=4", "throughput at c=64",
		"RSS idle", "RSS peak", "A/A: hop-b vs hop",
		"sequential tool round trip (both legs)", "sequential continued turn (the follow-up)",
		"tool c=16: CPU of the process under test", "continued c=16: throughput",
		"hop 6 / 50; hop-b 6 / 50;", "## Memory", "## Rounds",
		"## Hot and cold, side by side", "cold: sequential fresh turn: added latency", "cold: streamed turn, first content, added",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if strings.Count(report, "PASS")+strings.Count(report, "FAIL") < 19 {
		t.Errorf("report has fewer than 19 judged rows (15 targets, 4 checks):\n%s", report)
	}
	if strings.Contains(report, "exchanges failed") {
		t.Errorf("exchanges failed in a healthy run:\n%s", report)
	}
	t.Log("\n" + report)
}

func TestParseStatCPU(t *testing.T) {
	// comm with spaces and a ')' inside; utime 1234, stime 56.
	line := "4242 (a) b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 9 0 123 456 789\n"
	got, err := parseStatCPU([]byte(line))
	if err != nil || got != 1290 {
		t.Fatalf("parseStatCPU = %d, %v; want 1290", got, err)
	}
	if _, err := parseStatCPU([]byte("4242 (x S 1")); err == nil {
		t.Fatal("no error on a malformed line")
	}
}

func TestQuantile(t *testing.T) {
	v := []float64{5, 1, 3, 2, 4}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.25, 2}, {0.5, 3}, {0.75, 4}, {1, 5}} {
		if got := quantile(v, c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := quantile([]float64{1, 2}, 0.5); got != 1.5 {
		t.Errorf("median of 1,2 = %v", got)
	}
}

func TestAnalyzeStream(t *testing.T) {
	lines := []stamped{
		{10 * time.Microsecond, []byte(`data: {"eventType":"conversation","data":{"id":"c"}}` + "\n")},
		{20 * time.Microsecond, []byte(`data: {"eventType":"textChunk","data":{"textContent":"ab"}}` + "\n")},
		{30 * time.Microsecond, []byte(`data: {"eventType":"textChunk","data":{"textContent":"cd"}}` + "\n")},
		{50 * time.Microsecond, []byte(`data: {"eventType":"textChunk","data":{"textContent":"e"}}` + "\n")},
		{60 * time.Microsecond, []byte("data: [DONE]\n")},
	}
	st, err := analyzeStream(protoUpstream, lines, 70*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	if st.firstContent != 20e3 || st.lastByte != 70e3 || st.chunks != 3 || st.events != 5 || st.text != "abcde" {
		t.Fatalf("got %+v", st)
	}
	if got := st.perEvent(6); got != 10e3 { // (70 − 20) µs over 5 further events
		t.Fatalf("perEvent(6) = %v, want 10000", got)
	}
	if _, err := analyzeStream(protoUpstream, lines[:4], 0); err == nil {
		t.Fatal("a stream without [DONE] was accepted")
	}
	if _, err := analyzeStream(protoUpstream, []stamped{lines[0], lines[4]}, 0); err == nil {
		t.Fatal("a stream without text was accepted")
	}
}
