package anthropicsse

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Exchange is one captured Messages response.
type Exchange struct {
	Method, Path string
	Status       int
	Header       http.Header
	Stream       bool // the response was text/event-stream
	Body         []byte
}

// Recorder is an http.RoundTripper that keeps a copy of every response body
// to POST /v1/messages (count_tokens is not captured), so a test that drives an SDK can check the raw
// bytes the SDK parsed. The copy is complete once the SDK has read or closed
// the body.
type Recorder struct {
	Base http.RoundTripper // nil means http.DefaultTransport

	mu   sync.Mutex
	done []*Exchange
}

// RoundTrip forwards the request and tees the response body.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	base := r.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil || req.URL.Path != "/v1/messages" {
		return resp, err
	}
	ex := &Exchange{Method: req.Method, Path: req.URL.Path, Status: resp.StatusCode, Header: resp.Header.Clone(),
		Stream: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")}
	resp.Body = &teeBody{rc: resp.Body, ex: ex, rec: r}
	return resp, nil
}

// Exchanges returns the responses whose bodies have been closed, in order.
func (r *Recorder) Exchanges() []Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Exchange, len(r.done))
	for i, ex := range r.done {
		out[i] = *ex
	}
	return out
}

type teeBody struct {
	rc   io.ReadCloser
	buf  bytes.Buffer
	ex   *Exchange
	rec  *Recorder
	once sync.Once
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	t.buf.Write(p[:n])
	return n, err
}

func (t *teeBody) Close() error {
	// Drain what the reader left so the capture is the whole body.
	_, _ = io.Copy(&t.buf, t.rc)
	err := t.rc.Close()
	t.once.Do(func() {
		t.ex.Body = t.buf.Bytes()
		t.rec.mu.Lock()
		t.rec.done = append(t.rec.done, t.ex)
		t.rec.mu.Unlock()
	})
	return err
}

// CheckExchange applies the checker that fits the exchange: the stream
// grammar to an event stream, CheckMessage to a 200 JSON body and CheckError
// to any other status. The returned Result's Outcome is Failed for an error.
func CheckExchange(ex Exchange) (Result, error) {
	switch {
	case ex.Stream:
		return Check(ex.Body)
	case ex.Status == http.StatusOK:
		return CheckMessage(ex.Body)
	}
	e, err := CheckError(ex.Status, ex.Body)
	return Result{Outcome: Failed, Error: e, Raw: ex.Body}, err
}
