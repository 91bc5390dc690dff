package postman_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/internal/testkit"
	"github.com/pmgate/pmgate/ports"
)

const (
	sub           = testkit.Subdomain
	webHost       = sub + ".postman.co"
	cookie        = testkit.Cookie
	token         = testkit.Token
	downstreamKey = "pk-DOWNSTREAM-key-0123456789abcdef"
	workspace     = testkit.Workspace
	publicModel   = "gpt-5.6-sol"
	upstreamModel = "GPT_56_SOL"
)

// startEmu runs an emulator for both strategies, closed at cleanup.
var startEmu = testkit.StartEmulator

// env is a getenv over a map; pairs override the base.
func env(base map[string]string, pairs ...string) func(string) string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return func(k string) string { return m[k] }
}

func webEnv() map[string]string {
	return map[string]string{
		"POSTMAN_TRANSPORT_STRATEGY":  "web_session",
		"POSTMAN_SESSION_COOKIE":      cookie,
		"POSTMAN_WORKSPACE_SUBDOMAIN": sub,
		"POSTMAN_WORKSPACE_ID":        workspace,
		"PROVIDER_MODELS":             publicModel,
		"POSTMAN_MODEL_MAP":           publicModel + "=" + upstreamModel,
	}
}

func tokenEnv(origin string) map[string]string {
	return map[string]string{
		"POSTMAN_TRANSPORT_STRATEGY": "access_token",
		"POSTMAN_ACCESS_TOKEN":       token,
		"POSTMAN_ORIGIN":             origin,
		"POSTMAN_WORKSPACE_ID":       workspace,
		"PROVIDER_MODELS":            publicModel,
		"POSTMAN_MODEL_MAP":          publicModel + "=" + upstreamModel,
	}
}

// mustParse parses the adapter's configuration of a test environment and sets
// the request limits the gateway would: its defaults, or the environment's
// MAX_BODY_BYTES, MAX_TOOLS, MAX_TOOL_RESULT_BYTES and REQUEST_TIMEOUT_MS
// (cmd/gateway parses these process settings in the binary).
func mustParse(t testing.TB, getenv func(string) string) pmconfig.Config {
	t.Helper()
	cfg, err := pmconfig.Parse(getenv, strings.Split(getenv("PROVIDER_MODELS"), ","))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	limit := func(name string, def int) int {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return n
		}
		return def
	}
	cfg.Limits = pmconfig.Limits{
		RequestTimeout:       time.Duration(limit("REQUEST_TIMEOUT_MS", 120000)) * time.Millisecond,
		MaxBodyBytes:         limit("MAX_BODY_BYTES", 1<<20),
		MaxEventBytes:        1 << 20,
		MaxOutputBytes:       4 << 20,
		MaxTools:             limit("MAX_TOOLS", 64),
		MaxToolArgumentBytes: 256 << 10,
		MaxToolResultBytes:   limit("MAX_TOOL_RESULT_BYTES", 256<<10),
	}
	return cfg
}

func mustNew(t testing.TB, cfg pmconfig.Config, opts ...postman.Option) *postman.Client {
	t.Helper()
	c, err := postman.New(cfg, opts...)
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	return c
}

// dialTo maps webHost:443 to addr and refuses every other address.
func dialTo(addr string) func(ctx context.Context, network, a string) (net.Conn, error) {
	return func(ctx context.Context, network, a string) (net.Conn, error) {
		if a != webHost+":443" {
			return nil, errors.New("test dialer: unexpected address")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// webClient is a web_session client of emu; pairs adjust the environment.
func webClient(t *testing.T, emu *emulator.Server, pairs []string, opts ...postman.Option) *postman.Client {
	t.Helper()
	cfg := mustParse(t, env(webEnv(), pairs...))
	opts = append([]postman.Option{postman.WithDialContext(dialTo(emu.Addr())), postman.WithRootCAs(emu.CertPool())}, opts...)
	return mustNew(t, cfg, opts...)
}

// tokenClient is an access_token client of emu.
func tokenClient(t *testing.T, emu *emulator.Server, pairs []string, opts ...postman.Option) *postman.Client {
	t.Helper()
	cfg := mustParse(t, env(tokenEnv(emu.Origin()), pairs...))
	opts = append([]postman.Option{postman.WithRootCAs(emu.CertPool())}, opts...)
	return mustNew(t, cfg, opts...)
}

func str(s string) *string { return &s }

func userText(text string) ports.UpstreamRequest {
	return ports.UpstreamRequest{Chat: chat.Request{
		Model:             publicModel,
		Messages:          []chat.Message{{Role: chat.RoleUser, Content: str(text)}},
		ToolChoice:        chat.ToolChoice{Mode: chat.ToolChoiceAuto},
		ParallelToolCalls: true,
	}}
}

var weatherTools = []chat.Tool{
	{Name: "get_weather", Description: "Weather of a city", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`), UpstreamParameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "get_time", Description: "Time in a zone", Parameters: []byte(`{"type":"object","properties":{"tz":{"type":"string"},"exact":{"type":"boolean"}},"required":["tz","exact"]}`), UpstreamParameters: []byte(`{"type":"object","properties":{"tz":{"type":"string"},"exact":{"type":"boolean"}},"required":["tz","exact"]}`)},
}

func toolRequest(text string, parallel bool) ports.UpstreamRequest {
	r := userText(text)
	r.Chat.Tools = weatherTools
	r.Chat.ParallelToolCalls = parallel
	return r
}

// drained is everything a stream produced.
type drained struct {
	events []chat.Event
	err    error // io.EOF or the final error
	text   string
}

func drain(t testing.TB, s *postman.Stream) drained {
	t.Helper()
	var d drained
	ctx := context.Background()
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatal("stream does not end")
		}
		ev, err := s.Next(ctx)
		if err != nil {
			d.err = err
			return d
		}
		d.events = append(d.events, ev)
		if ev.Kind == chat.EventText {
			d.text += ev.Text
		}
	}
}

// open sends req and drains the stream; an error before the stream is returned as is.
func open(t testing.TB, c *postman.Client, req ports.UpstreamRequest) (*postman.Stream, drained, error) {
	t.Helper()
	s, err := c.Open(context.Background(), req)
	if err != nil {
		return nil, drained{}, err
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, drain(t, s), nil
}

// logBuffer is a concurrency-safe slog sink.
type logBuffer = testkit.SyncBuffer

func newLogger(l *logBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fakeTLS is an HTTPS test server whose certificate is valid for *.postman.co
// and 127.0.0.1, signed by its own CA.
type fakeTLS struct {
	srv  *httptest.Server
	pool *x509.CertPool
}

func newFakeTLS(t *testing.T, h http.Handler) *fakeTLS {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pmgate test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "postman.co"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"*.postman.co"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &fakeTLS{srv: srv, pool: pool}
}

func (f *fakeTLS) addr() string { return strings.TrimPrefix(f.srv.URL, "https://") }

// client returns a client of the given strategy talking to the fake.
func (f *fakeTLS) client(t *testing.T, strategy string, opts ...postman.Option) *postman.Client {
	t.Helper()
	var cfg pmconfig.Config
	if strategy == "web_session" {
		cfg = mustParse(t, env(webEnv()))
		opts = append([]postman.Option{postman.WithDialContext(dialTo(f.addr()))}, opts...)
	} else {
		cfg = mustParse(t, env(tokenEnv(f.srv.URL)))
	}
	opts = append([]postman.Option{postman.WithRootCAs(f.pool)}, opts...)
	return mustNew(t, cfg, opts...)
}

// sseHandler answers every request with body as an event stream.
func sseHandler(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, body)
	}
}
