//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// suiteWitness is one Node suite's loopback witness. It is two things:
//
//   - the refusing proxy every client and agent of the suite is pointed at
//     (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY): a CONNECT or an absolute-form
//     request is recorded and refused with a 403, so an attempt to reach a
//     vendor host fails fast and shows up in the report instead of hanging;
//   - the sink of the suite's notes (POST /_note {"scenario","text"}): what a
//     scenario measured (query sizes, rounds, wall time), for the report.
//
// The suites run in a network namespace that has only loopback (make
// test-clients), so the proxy is a witness, not the fence.
type suiteWitness struct {
	url string

	mu       sync.Mutex
	attempts []string
	notes    []string
}

func newSuiteWitness(t *testing.T) *suiteWitness {
	w := &suiteWitness{}
	srv := httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	w.url = srv.URL
	return w
}

func (w *suiteWitness) serve(rw http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Host == "" && r.URL.Path == "/_note" {
		var n struct{ Scenario, Text string }
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&n); err != nil {
			http.Error(rw, "witness: note", http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.notes = append(w.notes, n.Scenario+": "+n.Text)
		w.mu.Unlock()
		rw.WriteHeader(http.StatusNoContent)
		return
	}
	target := r.Host
	if r.Method != http.MethodConnect && r.URL.Host != "" {
		target = r.URL.Scheme + "://" + r.URL.Host + r.URL.Path
	}
	w.mu.Lock()
	w.attempts = append(w.attempts, fmt.Sprintf("%s %s (user-agent %q)", r.Method, target, r.UserAgent()))
	w.mu.Unlock()
	// Answer and close at once: a client must not wait for anything more.
	const refusal = "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
	if conn, buf, err := http.NewResponseController(rw).Hijack(); err == nil {
		_, _ = buf.WriteString(refusal)
		_ = buf.Flush()
		_ = conn.Close()
		return
	}
	rw.Header().Set("Connection", "close")
	rw.WriteHeader(http.StatusForbidden)
}

// env points a client at the proxy; loopback stays direct.
func (w *suiteWitness) env() []string {
	return []string{
		"HTTPS_PROXY=" + w.url, "HTTP_PROXY=" + w.url, "ALL_PROXY=" + w.url,
		"https_proxy=" + w.url, "http_proxy=" + w.url, "all_proxy=" + w.url,
		"NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1",
		"PMGATE_WITNESS_URL=" + w.url,
	}
}

// report returns the recorded attempts (distinct, with counts) and notes.
func (w *suiteWitness) report() (attempts, notes []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[string]int{}
	for _, a := range w.attempts {
		seen[a]++
	}
	for a, n := range seen {
		attempts = append(attempts, fmt.Sprintf("%d× %s", n, a))
	}
	sort.Strings(attempts)
	return attempts, append([]string(nil), w.notes...)
}

// clientsReport collects one summary per suite into PMGATE_CLIENTS_REPORT
// (make test-clients prints it), so the outbound attempts and measurements
// are visible even when every test passes.
var clientsReport struct {
	mu    sync.Mutex
	lines []string
}

func reportSuite(t *testing.T, client string, elapsed time.Duration, w *suiteWitness) {
	attempts, notes := w.report()
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s in %.1fs", t.Name(), map[bool]string{true: "FAIL", false: "ok"}[t.Failed()], elapsed.Seconds())
	if len(attempts) == 0 {
		b.WriteString(", no outbound attempts\n")
	} else {
		fmt.Fprintf(&b, ", %d outbound attempt(s), all refused:\n", len(attempts))
		for _, a := range attempts {
			fmt.Fprintf(&b, "    outbound %s\n", a)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "    %s\n", n)
	}
	t.Log(strings.TrimSuffix(b.String(), "\n"))
	clientsReport.mu.Lock()
	clientsReport.lines = append(clientsReport.lines, b.String())
	clientsReport.mu.Unlock()
}

// writeClientsReport writes the collected summaries when PMGATE_CLIENTS_REPORT names a file.
func writeClientsReport(t *testing.T) {
	path := os.Getenv("PMGATE_CLIENTS_REPORT")
	if path == "" {
		return
	}
	clientsReport.mu.Lock()
	lines := append([]string(nil), clientsReport.lines...)
	clientsReport.mu.Unlock()
	sort.Strings(lines)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Errorf("clients report: %v", err)
	}
}

// loopbackOnly reports whether this process sees no network interface but
// loopback (a namespace made by scripts/netns.sh), and names one that is not.
func loopbackOnly() (bool, string) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return false, err.Error()
	}
	for _, i := range ifaces {
		if i.Flags&net.FlagLoopback == 0 {
			return false, i.Name
		}
	}
	return true, ""
}

// requireLoopbackOnly fails when PMGATE_CLIENTS_NETNS=1 (make test-clients)
// but the test can see an interface other than loopback.
func requireLoopbackOnly(t *testing.T) {
	if os.Getenv("PMGATE_CLIENTS_NETNS") != "1" {
		return
	}
	if ok, iface := loopbackOnly(); !ok {
		t.Fatalf("PMGATE_CLIENTS_NETNS=1 but interface %s is not loopback: run the suite through scripts/netns.sh", iface)
	}
}

// TestTheWitnessRefusesAndRecordsOutboundAttempts: a proxied HTTPS and HTTP
// attempt both fail and are both listed; a note is kept.
func TestTheWitnessRefusesAndRecordsOutboundAttempts(t *testing.T) {
	w := newSuiteWitness(t)
	proxyURL, _ := url.Parse(w.url)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 5 * time.Second}
	if resp, err := client.Get("https://vendor.example.invalid/telemetry"); err == nil {
		resp.Body.Close()
		t.Fatal("an HTTPS attempt through the witness succeeded")
	}
	resp, err := client.Get("http://registry.example.invalid/plugin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an HTTP attempt through the witness answered %d", resp.StatusCode)
	}
	note, err := http.Post(w.url+"/_note", "application/json", strings.NewReader(`{"scenario":"s","text":"query 123 chars"}`))
	if err != nil {
		t.Fatal(err)
	}
	note.Body.Close()
	attempts, notes := w.report()
	if len(attempts) != 2 || !strings.Contains(attempts[0], "CONNECT vendor.example.invalid:443") ||
		!strings.Contains(attempts[1], "GET http://registry.example.invalid/plugin") {
		t.Errorf("attempts %q", attempts)
	}
	if len(notes) != 1 || notes[0] != "s: query 123 chars" {
		t.Errorf("notes %q", notes)
	}
}
