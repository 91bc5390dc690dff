//go:build unix

package main

import (
	"crypto/rand"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// retryQuestions is the number of questions retry.test.mjs asks.
const retryQuestions = 4

// TestTheSDKsOwnRetriesSpendOneDispatchPerQuestion runs the openai npm SDK and
// @anthropic-ai/sdk with a 1 s timeout against questions the emulator answers
// after 2.5 s: each SDK times out and retries by itself (twice at most), and
// the gateway answers every retry from the first attempt, so the emulator
// counts one dispatch per question — on one gateway in both strategies, and
// on two replicas sharing PostgreSQL behind a proxy that sends each attempt
// to the other replica than the one before. Without the recognition
// (IDEMPOTENCY_CACHE_BYTES=0) the same run dispatches every attempt and
// every question fails.
func TestTheSDKsOwnRetriesSpendOneDispatchPerQuestion(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			emu := newEmulator(t)
			s := serveWith(t, emu, st, nil)
			runRetrySuite(t, s.base, st)
			is.New(t).Equal(emu.Count(emulator.KindUserQuery), retryQuestions) // one dispatch per question
		})
		t.Run(st+"/two replicas on PostgreSQL", func(t *testing.T) {
			is := is.New(t)
			key := make([]byte, 32)
			_, _ = rand.Read(key)
			env := map[string]string{"CORRELATION_STORE": "postgres", "CORRELATION_POSTGRES_URL": pgSchema(t),
				"CORRELATION_PRINCIPAL_KEY": base64.RawURLEncoding.EncodeToString(key)}
			emu := newEmulator(t)
			a := serveWith(t, emu, st, env)
			b := serveWith(t, emu, st, env)
			proxy, sent := alternate(t, a.base, b.base)
			runRetrySuite(t, proxy, st)
			is.Equal(emu.Count(emulator.KindUserQuery), retryQuestions) // one dispatch per question
			is.True(sent[0].Load() > 0 && sent[1].Load() > 0)           // the retries reached the other replica
			t.Logf("attempts through replica A: %d, B: %d", sent[0].Load(), sent[1].Load())
		})
	}
}

// runRetrySuite runs clients/js/retry.test.mjs against origin.
func runRetrySuite(t *testing.T, origin, strategy string) {
	t.Helper()
	runNodeSuite(t, nodeSuite{"retry", "retry.test.mjs", 2 * time.Minute, false}, []string{
		"PMGATE_ORIGIN=" + origin,
		"PMGATE_API_KEY=" + testKey,
		"PMGATE_MODEL=" + testModel,
		"PMGATE_RETRY_DELAY_MS=2500",
		"PMGATE_RETRY_TAG=" + strategy + "-" + strconv.FormatInt(time.Now().UnixNano(), 36),
	})
}

// alternate is a loopback proxy that sends each request to the other of two
// gateways than the one before (a load balancer that moves a client's retry
// to another replica); sent counts the requests each received.
func alternate(t *testing.T, a, b string) (string, *[2]atomic.Int64) {
	t.Helper()
	var next atomic.Int64
	sent := &[2]atomic.Int64{}
	targets := [2]*url.URL{}
	for i, raw := range []string{a, b} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		targets[i] = u
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			i := int(next.Add(1)-1) % 2
			sent[i].Add(1)
			r.SetURL(targets[i])
		},
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0), // the SDKs' timeouts cancel requests by design
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL, sent
}

var _ http.Handler = (*httputil.ReverseProxy)(nil)
