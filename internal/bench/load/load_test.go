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
	if err := run(ctx, []string{"-quick", "-out", out}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
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
		"## Targets (gateway against the bare hop)",
		"sequential small text turn: added latency",
		"CPU per request at concurrency 16",
		"streamed turn: first data event, added",
		"streamed turn: each further chunk, added",
		"RSS idle", "RSS peak", "## Rounds",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if strings.Count(report, "PASS")+strings.Count(report, "FAIL") < 6 {
		t.Errorf("report has fewer than six judged targets:\n%s", report)
	}
	t.Log("\n" + report)
}

func TestStreamQueryFillsTheQuote(t *testing.T) {
	// The emulator quotes at most 200 bytes; all of them should be used.
	if len(streamQuery) != 200 {
		t.Fatalf("streamQuery is %d bytes, want 200", len(streamQuery))
	}
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
	st, err := analyzeStream(kindUpstream, lines)
	if err != nil {
		t.Fatal(err)
	}
	if st.first != 10e3 || st.firstText != 20e3 || st.perChunk != 15e3 || st.chunks != 3 || st.text != "abcde" {
		t.Fatalf("got %+v", st)
	}
	if _, err := analyzeStream(kindUpstream, lines[:4]); err == nil {
		t.Fatal("a stream without [DONE] was accepted")
	}
}
