package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// connBurst opens n keep-alive client connections to the gateway, each
// completing one GET /health and then staying open and idle, with at most 64
// dials in flight; it samples the gateway's RSS and open descriptors every
// 100 ms during the burst, then closes every client connection and samples RSS
// every 5 s for settle. It returns the Markdown report. Loopback only; every
// loop is bounded by n and by ctx.
func (r *rig) connBurst(ctx context.Context, n int, settle time.Duration) (string, error) {
	u, err := url.Parse(r.targets[nameGateway].url)
	if err != nil {
		return "", err
	}
	addr, pid := u.Host, r.gw.pid()
	sample := func() (rss int64, fds int) {
		rss, _ = statusKiB(pid, "VmRSS")
		if ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd"); err == nil {
			fds = len(ents)
		}
		return rss, fds
	}
	idleRSS, idleFDs := sample()

	var mu sync.Mutex
	peakRSS, peakFDs := idleRSS, idleFDs
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				rss, fds := sample()
				mu.Lock()
				peakRSS, peakFDs = max(peakRSS, rss), max(peakFDs, fds)
				mu.Unlock()
			}
		}
	}()

	conns := make([]net.Conn, n)
	served := make([]bool, n)
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
			if err != nil {
				return
			}
			conns[i] = c
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			served[i] = resp.StatusCode == http.StatusOK
		}()
	}
	wg.Wait()
	burstTook := time.Since(start)
	ok := 0
	for _, s := range served {
		if s {
			ok++
		}
	}
	time.Sleep(500 * time.Millisecond)
	heldRSS, heldFDs := sample()
	close(stop)
	<-sampled
	for _, c := range conns {
		if c != nil {
			_ = c.Close()
		}
	}
	var after []string
	var lastRSS int64
	var lastFDs int
	for waited := time.Duration(0); waited <= settle && ctx.Err() == nil; waited += 5 * time.Second {
		if waited > 0 {
			if err := sleepCtx(ctx, 5*time.Second); err != nil {
				break
			}
		}
		lastRSS, lastFDs = sample()
		after = append(after, fmt.Sprintf("%s: %d KiB, %d fds", waited, lastRSS, lastFDs))
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# Connection burst against the gateway\n\n")
	fmt.Fprintf(&b, "%d keep-alive connections (64 dials in flight), each one GET /health, then left open; gateway MAX_CONNECTIONS=%s.\n\n", n, r.maxConnsLabel())
	fmt.Fprintf(&b, "| | RSS | open descriptors |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| idle, before the burst | %.1f MiB | %d |\n", float64(idleRSS)/1024, idleFDs)
	fmt.Fprintf(&b, "| peak during the burst (100 ms samples) | %.1f MiB | %d |\n", float64(peakRSS)/1024, peakFDs)
	fmt.Fprintf(&b, "| all %d client connections still open | %.1f MiB | %d |\n", n, float64(heldRSS)/1024, heldFDs)
	fmt.Fprintf(&b, "| %s after the clients closed | %.1f MiB | %d |\n\n", settle, float64(lastRSS)/1024, lastFDs)
	fmt.Fprintf(&b, "Served: %d of %d in %s. Settling samples: %s.\n", ok, n, burstTook.Round(time.Millisecond), strings.Join(after, "; "))
	return b.String(), nil
}

func (r *rig) maxConnsLabel() string {
	if r.s.maxConns > 0 {
		return strconv.Itoa(r.s.maxConns)
	}
	return "default (256)"
}
