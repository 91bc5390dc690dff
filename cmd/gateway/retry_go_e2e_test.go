package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/matryer/is"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// attemptLog records what an SDK sent on each attempt: its retry count,
// whether it named an idempotency key, and its body.
type attemptLog struct {
	mu       sync.Mutex
	counts   []string
	keys     []string
	bodies   [][]byte
	delegate http.RoundTripper
}

func (l *attemptLog) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	l.mu.Lock()
	l.counts = append(l.counts, r.Header.Get("X-Stainless-Retry-Count"))
	l.keys = append(l.keys, r.Header.Get("Idempotency-Key"))
	l.bodies = append(l.bodies, body)
	l.mu.Unlock()
	return l.delegate.RoundTrip(r)
}

// TestTheGoSDKsOwnRetriesSpendOneDispatchPerQuestion is the Go half of
// TestTheSDKsOwnRetriesSpendOneDispatchPerQuestion, with the SDKs pinned in
// go.mod and their default two retries, on a question the emulator answers
// after 2.5 s:
//
//   - anthropic-sdk-go with a 1 s timeout per attempt retries a timed-out
//     attempt by itself;
//   - openai-go returns a timed-out attempt's error without retrying it, so
//     it runs behind a load balancer (a proxy) that answers 504 after 1 s
//     without response headers, which openai-go retries.
//
// Each sends its attempts with X-Stainless-Retry-Count 0, 1, 2, no
// idempotency key and the same body bytes; every question is answered with
// one upstream dispatch.
func TestTheGoSDKsOwnRetriesSpendOneDispatchPerQuestion(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			emu := newEmulator(t)
			s := serveWith(t, emu, st, nil)

			ol := &attemptLog{delegate: http.DefaultTransport}
			oc := openai.NewClient(option.WithBaseURL(impatientProxy(t, s.base)+"/v1"), option.WithAPIKey(testKey),
				option.WithHTTPClient(&http.Client{Transport: ol}))
			c, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: testModel,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("retry openai-go #delay_ms=2500")}})
			is.NoErr(err)
			is.Equal(string(c.Choices[0].FinishReason), "stop")

			al := &attemptLog{delegate: http.DefaultTransport}
			ac := anthropic.NewClient(aoption.WithBaseURL(s.base), aoption.WithAPIKey(testKey),
				aoption.WithRequestTimeout(time.Second), aoption.WithHTTPClient(&http.Client{Transport: al}))
			m, err := ac.Messages.New(t.Context(), anthropic.MessageNewParams{Model: anthropic.Model(testModel), MaxTokens: 256,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("retry anthropic-sdk-go #delay_ms=2500"))}})
			is.NoErr(err)
			is.Equal(string(m.StopReason), "end_turn")

			is.Equal(emu.Count(emulator.KindUserQuery), 2) // one dispatch per question
			for _, l := range []*attemptLog{ol, al} {
				is.True(len(l.counts) >= 2) // the SDK retried by itself
				for i := range l.counts {
					is.Equal(l.counts[i], []string{"0", "1", "2"}[i]) // each retry marked
					is.Equal(l.keys[i], "")                           // without an idempotency key
					is.Equal(string(l.bodies[i]), string(l.bodies[0]))
				}
			}
		})
	}
}

// impatientProxy is a load balancer in front of origin that answers 504 when
// the response headers take longer than 1 s (and cancels the request).
func impatientProxy(t *testing.T, origin string) string {
	t.Helper()
	u, err := url.Parse(origin)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = time.Second
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
			w.WriteHeader(http.StatusGatewayTimeout)
		},
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}
