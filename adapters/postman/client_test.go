package postman_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

func TestNewRefusesInvalidWiring(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, env(tokenEnv("https://127.0.0.1:8443")))
	cases := []struct {
		name string
		cfg  pmconfig.Config
		opts []postman.Option
	}{
		{"zero configuration", pmconfig.Config{}, nil},
		{"no limits", func() pmconfig.Config { c := cfg; c.MaxEventBytes = 0; return c }(), nil},
		{"no timeout", func() pmconfig.Config { c := cfg; c.RequestTimeout = 0; return c }(), nil},
		{"transport with a dialer", cfg, []postman.Option{postman.WithTransport(http.DefaultTransport), postman.WithDialContext(dialTo("127.0.0.1:1"))}},
		{"transport with roots", cfg, []postman.Option{postman.WithTransport(http.DefaultTransport), postman.WithRootCAs(x509.NewCertPool())}},
		{"transport without verification", cfg, []postman.Option{postman.WithTransport(&http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}})}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			_, err := postman.New(c.cfg, c.opts...)
			is.True(errs.Has(err, errs.ConfigInvalid)) // refused at wiring time
		})
	}
}

func TestWithTransportUsesTheGivenTransport(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newFakeTLS(t, sseHandler(okStream))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.pool}}
	t.Cleanup(tr.CloseIdleConnections)
	c := mustNew(t, mustParse(t, env(tokenEnv(f.srv.URL))), postman.WithTransport(tr))
	_, d, err := open(t, c, userText("hi"))
	is.NoErr(err)           // the given transport carries the request
	is.Equal(d.err, io.EOF) // and its stream completes
}

// failingRoundTripper fails every request after reading its body.
type failingRoundTripper struct{}

func (failingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	return nil, errors.New("boom")
}

func TestAnOpaqueTransportNeverClaimsNotSent(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	c := mustNew(t, mustParse(t, env(tokenEnv("https://127.0.0.1:8443"))), postman.WithTransport(failingRoundTripper{}))
	_, _, err := open(t, c, userText("hi"))
	is.True(errs.Has(err, errs.UpstreamConnectionLost)) // the adapter cannot know what was written
	is.True(!errors.Is(err, ports.ErrNotSent))          // so it never claims "not sent"
}

func TestDNSFailureIsUnavailableAndNotSent(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dial := func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.DNSError{Err: "no such host", Name: webHost, IsNotFound: true}
	}
	c := mustNew(t, mustParse(t, env(webEnv())), postman.WithDialContext(dial))
	_, _, err := open(t, c, userText("hi"))
	is.True(errs.Has(err, errs.UpstreamUnavailable)) // the name does not resolve
	is.True(errors.Is(err, ports.ErrNotSent))        // nothing was sent
}

func TestCancelledBeforeSendingIsClientCancelledAndNotSent(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f, n := countingServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.client(t, "access_token").Open(ctx, userText("hi"))
	is.True(errs.Has(err, errs.ClientCancelled)) // the caller was gone before the request
	is.True(errors.Is(err, ports.ErrNotSent))    // nothing was written
	is.Equal(n.Load(), int32(0))                 // the server saw nothing
}

func TestASlowErrorBodyIsClassifiedByItsStatus(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newFakeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, "partial")
		http.NewResponseController(w).Flush()
		<-r.Context().Done() // the rest never comes
	}))
	start := time.Now()
	_, _, err := open(t, f.client(t, "web_session", postman.WithPeekTimeout(100*time.Millisecond)), userText("hi"))
	is.True(errs.Has(err, errs.UpstreamServerError)) // 5xx
	is.True(time.Since(start) < 2*time.Second)       // without waiting for the body
}
