package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSoak is the bounded soak run behind `make soak` (skipped unless
// PMGATE_SOAK is a duration, e.g. 10m): a gateway started through run (both
// the gateway and the emulator in this process) under mixed traffic — JSON
// text, streamed text, a tool turn and its continuation, and a stream the
// client aborts — from a fixed number of workers, with RSS, heap and
// goroutines sampled every PMGATE_SOAK_EVERY (10 s). After a warm-up of a
// tenth of the run (at least 20 s) the sample is the baseline; when the load
// stops and idle connections are closed, RSS and goroutines must be back
// within 10 % of it. PMGATE_SOAK_OUT names a Markdown file for the figures.
// Everything stays on loopback; every loop ends with the deadline.
func TestSoak(t *testing.T) {
	total, err := time.ParseDuration(os.Getenv("PMGATE_SOAK"))
	if err != nil || total <= 0 {
		t.Skip("set PMGATE_SOAK to a duration (make soak) to run the soak")
	}
	every := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv("PMGATE_SOAK_EVERY")); err == nil && d > 0 {
		every = d
	}
	warm := max(total/10, 20*time.Second)
	workers := 8
	// A fixed port and error-level logs: the in-memory log buffer must not
	// grow with the run (it would be counted as the gateway's memory).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	s := serve(t, "access_token", map[string]string{"PROVIDER_PORT": port, "MAX_CONCURRENT_REQUESTS": "64", "LOG_LEVEL": "error",
		"CORRELATION_PENDING_TTL_MS": "10000", "CORRELATION_TERMINAL_TTL_MS": "10000"})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers * 2}}
	defer client.CloseIdleConnections()

	var counts [4]atomic.Int64 // text, stream, tool round trip, abort
	var failures atomic.Int64
	var firstFailure atomic.Value
	fail := func(what string, err error) {
		if failures.Add(1) == 1 {
			firstFailure.Store(what + ": " + err.Error())
		}
	}
	post := func(ctx context.Context, body string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", s.base+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testKey)
		return client.Do(req)
	}
	expect200 := func(ctx context.Context, body string) (string, error) {
		resp, err := post(ctx, body)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return "", err
		}
		if resp.StatusCode != 200 {
			return "", fmt.Errorf("status %d: %.200s", resp.StatusCode, b)
		}
		return string(b), nil
	}
	deadline := time.Now().Add(total)
	ctx, cancel := context.WithDeadline(t.Context(), deadline)
	defer cancel()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				kind := (w + i) % 4
				var err error
				switch kind {
				case 0:
					_, err = expect200(ctx, userBody("soak text "+strconv.Itoa(i), false, ""))
				case 1:
					var out string
					out, err = expect200(ctx, userBody("soak stream "+strconv.Itoa(i), true, `,"stream_options":{"include_usage":true}`))
					if err == nil && !strings.Contains(out, "data: [DONE]") {
						err = fmt.Errorf("stream without [DONE]")
					}
				case 2:
					err = soakToolRoundTrip(ctx, expect200, i)
				case 3:
					err = soakAbort(ctx, post)
				}
				if err != nil && ctx.Err() == nil {
					fail([]string{"text", "stream", "tool", "abort"}[kind], err)
					continue
				}
				counts[kind].Add(1)
			}
		}()
	}

	type sample struct {
		at           time.Duration
		rssKiB       int64
		heapKiB      uint64
		goroutines   int
		requestsDone int64
	}
	take := func(start time.Time) sample {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		n := int64(0)
		for i := range counts {
			n += counts[i].Load()
		}
		return sample{at: time.Since(start).Round(time.Second), rssKiB: selfRSSKiB(t), heapKiB: ms.HeapInuse >> 10,
			goroutines: runtime.NumGoroutine(), requestsDone: n}
	}
	start := time.Now()
	var samples []sample
	var baseline sample
	tick := time.NewTicker(every)
	for loop := true; loop; {
		select {
		case <-ctx.Done():
			loop = false
		case <-tick.C:
			s.emu.Reset() // the in-process emulator's request log is the test's memory, not the gateway's
			smp := take(start)
			if baseline.at == 0 && time.Since(start) >= warm {
				runtime.GC()
				smp = take(start)
				baseline = smp
			}
			samples = append(samples, smp)
			t.Logf("soak %6s rss %6d KiB heap %6d KiB goroutines %4d requests %d", smp.at, smp.rssKiB, smp.heapKiB, smp.goroutines, smp.requestsDone)
		}
	}
	tick.Stop()
	wg.Wait()
	client.CloseIdleConnections()
	// Let closed connections and finished requests unwind, then measure.
	var final sample
	for range 20 {
		time.Sleep(500 * time.Millisecond)
		runtime.GC()
		final = take(start)
		if baseline.at != 0 && final.goroutines <= baseline.goroutines && final.rssKiB <= baseline.rssKiB*11/10 {
			break
		}
	}
	t.Logf("soak final rss %d KiB heap %d KiB goroutines %d", final.rssKiB, final.heapKiB, final.goroutines)

	var b strings.Builder
	fmt.Fprintf(&b, "| soak | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| duration, workers | %s, %d (warm-up %s) |\n", total, workers, warm)
	fmt.Fprintf(&b, "| requests: text, stream, tool round trips, aborts | %d, %d, %d, %d |\n",
		counts[0].Load(), counts[1].Load(), counts[2].Load(), counts[3].Load())
	fmt.Fprintf(&b, "| failures | %d |\n", failures.Load())
	fmt.Fprintf(&b, "| baseline after warm-up: RSS, heap in use, goroutines | %d KiB, %d KiB, %d |\n", baseline.rssKiB, baseline.heapKiB, baseline.goroutines)
	maxRSS, maxG := int64(0), 0
	for _, smp := range samples {
		maxRSS, maxG = max(maxRSS, smp.rssKiB), max(maxG, smp.goroutines)
	}
	fmt.Fprintf(&b, "| peak sample under load: RSS, goroutines | %d KiB, %d |\n", maxRSS, maxG)
	fmt.Fprintf(&b, "| after the load: RSS, heap in use, goroutines | %d KiB, %d KiB, %d |\n\n", final.rssKiB, final.heapKiB, final.goroutines)
	fmt.Fprintf(&b, "| t | RSS KiB | heap KiB | goroutines | requests done |\n|---|---|---|---|---|\n")
	for _, smp := range samples {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", smp.at, smp.rssKiB, smp.heapKiB, smp.goroutines, smp.requestsDone)
	}
	if out := os.Getenv("PMGATE_SOAK_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Log("\n" + b.String())

	if failures.Load() > 0 {
		t.Errorf("%d requests failed; first: %v", failures.Load(), firstFailure.Load())
	}
	if baseline.at == 0 {
		t.Fatalf("the run ended before the warm-up (%s) did", warm)
	}
	if final.goroutines > baseline.goroutines*11/10 {
		t.Errorf("goroutines %d after the load vs baseline %d: more than 10 %% above", final.goroutines, baseline.goroutines)
	}
	if final.rssKiB > baseline.rssKiB*11/10 {
		t.Errorf("RSS %d KiB after the load vs baseline %d KiB: more than 10 %% above", final.rssKiB, baseline.rssKiB)
	}
}

// soakToolRoundTrip runs a tool turn and its continuation to the final answer.
func soakToolRoundTrip(ctx context.Context, expect200 func(context.Context, string) (string, error), i int) error {
	history := []msg{{"role": "user", "content": "soak tools " + strconv.Itoa(i)}}
	out, err := expect200(ctx, soakChatBody(history))
	if err != nil {
		return err
	}
	var c completion
	if err := jsonUnmarshal(out, &c); err != nil || len(c.Choices) == 0 || len(c.Choices[0].Message.ToolCalls) == 0 {
		return fmt.Errorf("tool turn without tool calls: %.200s", out)
	}
	history = append(history, assistantAndResults(c, sunny)...)
	out, err = expect200(ctx, soakChatBody(history))
	if err != nil {
		return err
	}
	if !strings.Contains(out, `"finish_reason":"stop"`) {
		return fmt.Errorf("continuation did not finish: %.200s", out)
	}
	return nil
}

func soakChatBody(history []msg) string {
	b, err := jsonMarshal(history)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf(`{"model":%q,"messages":%s,"tools":%s}`, testModel, b, toolsJSON)
}

// soakAbort starts a slow stream, reads its first line and goes away.
func soakAbort(ctx context.Context, post func(context.Context, string) (*http.Response, error)) error {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := post(actx, userBody("#scenario=slow_stream", true, ""))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		return err
	}
	cancel()
	return nil
}

// selfRSSKiB reads this process's resident set from /proc (Linux).
func selfRSSKiB(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc: the soak needs Linux")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
func jsonMarshal(v any) ([]byte, error)   { return json.Marshal(v) }
