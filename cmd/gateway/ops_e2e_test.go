package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/errs"
)

// writeEnvFile writes an env file of the given lines (0600) and returns its
// path.
func writeEnvFile(t *testing.T, path string, lines ...string) string {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "gateway.env")
	}
	if err := os.WriteFile(path+".tmp", []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil { // one change, never a half-written file
		t.Fatal(err)
	}
	return path
}

// accessTokenEnv is an access_token configuration for emu, as env-file lines.
func accessTokenEnv(emu *emulator.Server, token string) []string {
	return []string{"PROVIDER_PORT=0", "PROVIDER_API_KEY=" + testKey, "PROVIDER_MODELS=" + testModel,
		"POSTMAN_TRANSPORT_STRATEGY=access_token", "POSTMAN_WORKSPACE_ID=" + testWorkspace,
		"POSTMAN_MODEL_MAP=" + testModel + "=GPT_55", "POSTMAN_ACCESS_TOKEN=" + token, "POSTMAN_ORIGIN=" + emu.Origin()}
}

// serveEnvFile starts `gateway serve --env-file FILE` with nothing in the
// real environment. trustEmulator adds the emulator's CA as a test option;
// without it the process trusts only what the configuration says.
func serveEnvFile(t *testing.T, emu *emulator.Server, file string, trustEmulator bool) *served {
	t.Helper()
	return serveEnvFileSeeing(t, emu, file, trustEmulator, nil)
}

// serveEnvFileSeeing is serveEnvFile whose every log write is also shown to
// seen, synchronously, as the gateway writes it (nil: not shown).
func serveEnvFileSeeing(t *testing.T, emu *emulator.Server, file string, trustEmulator bool, seen func(line []byte)) *served {
	t.Helper()
	var opts []postman.Option
	if trustEmulator {
		host := testSubdomain + ".postman.co:443"
		opts = append(opts, postman.WithRootCAs(emu.CertPool()),
			postman.WithDialContext(func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr != host && "https://"+addr != emu.Origin() {
					return nil, fmt.Errorf("test dialer: unexpected %s", addr)
				}
				var d net.Dialer
				return d.DialContext(ctx, network, emu.Addr())
			}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	p := program{getenv: func(string) string { return "" }, stdout: io.Discard, upstream: opts}
	logs := newGatewayLogs(&p)
	if seen != nil {
		p.stderr = seeingWriter{w: p.stderr, seen: seen}
	}
	go func() { done <- p.run(ctx, []string{"serve", "--env-file", file}) }()
	addrRE := regexp.MustCompile(`"addr":"([0-9.:]+)"`)
	deadline := time.Now().Add(10 * time.Second)
	var base string
	for base == "" && time.Now().Before(deadline) {
		if m := addrRE.FindStringSubmatch(logs.String()); m != nil {
			base = "http://" + m[1]
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("serve ended early: %v\n%s", err, logs.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if base == "" {
		cancel()
		t.Fatalf("gateway did not start:\n%s", logs.String())
	}
	t.Cleanup(func() {
		cancel()
		<-done
		checkLogLines(t, logs.String())
	})
	return &served{base: base, emu: emu, logs: logs, cancel: cancel, done: done}
}

// seeingWriter shows each write to seen before passing it on.
type seeingWriter struct {
	w    io.Writer
	seen func([]byte)
}

func (s seeingWriter) Write(b []byte) (int, error) {
	s.seen(b)
	return s.w.Write(b)
}

// chatStatus sends a one-line chat turn and returns the status and error code.
func chatStatus(t *testing.T, s *served, key string) (int, string) {
	t.Helper()
	resp := s.post(t, userBody("hello", false, ""), bearer(key)...)
	var e errorBody
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &e)
	return resp.StatusCode, e.Error.Code
}

// waitLog waits until the logs contain want.
func waitLog(t *testing.T, s *served, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q:\n%s", want, s.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSSLCertFileInTheEnvFileIsTrusted: the custom CA is named only in the
// env file (never in the process environment); the upstream is reached
// through it. Without it the same gateway fails with tls_unknown_authority.
func TestSSLCertFileInTheEnvFileIsTrusted(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	// The gateway's environment is empty: only the env file names the CA.
	with := serveEnvFile(t, emu, writeEnvFile(t, "", append(accessTokenEnv(emu, testToken), "SSL_CERT_FILE="+emu.CAFile())...), false)
	status, code := chatStatus(t, with, testKey)
	is.Equal(status, 200) // the emulator's CA, named only in the env file, is trusted
	is.Equal(code, "")
	without := serveEnvFile(t, emu, writeEnvFile(t, "", accessTokenEnv(emu, testToken)...), false)
	status, _ = chatStatus(t, without, testKey)
	is.Equal(status, 502)
	is.True(strings.Contains(without.logs.String(), `"cause":"tls_unknown_authority"`))
}

// TestCheckConfigListsFiveUnrelatedMistakesAtOnce: a file with five
// independent mistakes yields five lines in one run.
func TestCheckConfigListsFiveUnrelatedMistakesAtOnce(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	file := writeEnvFile(t, "", append(accessTokenEnv(emu, testToken),
		"PROVIDER_PORT=http", "MAX_BODY_BYTES=12", "TOOL_SCHEMA_POLICY=loose", "LOG_LEVEL=loud", "CORRELATION_STORE=redis")...)
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"check-config", "--env-file", file}, noEnv, &out, &errOut)
	is.Equal(exitCode(err), 78)
	lines := regexp.MustCompile(`(?m)^  - `).FindAllString(errOut.String(), -1)
	is.Equal(len(lines), 5) // five mistakes, five lines
	for _, v := range []string{"PROVIDER_PORT", "MAX_BODY_BYTES", "TOOL_SCHEMA_POLICY", "LOG_LEVEL", "CORRELATION_STORE"} {
		is.True(strings.Contains(errOut.String(), v))
	}
}

// TestMisspelledNamesInTheEnvFileAreWarnedWithTheNearest: a name that looks
// like a setting but is not read gets a warning naming the nearest setting.
func TestMisspelledNamesInTheEnvFileAreWarnedWithTheNearest(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	file := writeEnvFile(t, "", append(accessTokenEnv(emu, testToken), "PROVIDER_MODLES=x", "POSTMAN_SESION_COOKIE=y",
		"PROVIDER_FROBNICATE_EVERYTHING_NOW=1", "HOME_DIR=/tmp")...)
	var out bytes.Buffer
	is.NoErr(run(t.Context(), []string{"check-config", "--env-file", file}, noEnv, &out, io.Discard))
	is.True(strings.Contains(out.String(), "PROVIDER_MODLES in the env file is not a setting the gateway reads; did you mean PROVIDER_MODELS?"))
	is.True(strings.Contains(out.String(), "did you mean POSTMAN_SESSION_COOKIE?"))
	is.True(strings.Contains(out.String(), "PROVIDER_FROBNICATE_EVERYTHING_NOW in the env file is not a setting"))
	is.True(!strings.Contains(out.String(), "HOME_DIR")) // not a setting's prefix, not near one
}

// TestTheEnvFileCommentRule: one rule, documented in docs/CONFIGURATION.md.
func TestTheEnvFileCommentRule(t *testing.T) {
	is := is.New(t)
	for raw, want := range map[string]string{
		`abc # a comment`:          "abc",
		"abc\t# a comment":         "abc",
		`abc#def`:                  "abc#def",
		`"a # b" # comment`:        "a # b",
		`'it''s'`:                  "", // refused below
		`"quoted"`:                 "quoted",
		`s%3Aabc.def`:              "s%3Aabc.def",
		`https://h/x#frag`:         "https://h/x#frag",
		`"a"   #c`:                 "a",
		`plain value with spaces`:  "plain value with spaces",
		`# only a comment`:         "# only a comment", // a value that starts with # is a value
		`value #`:                  "value",
		`'single # inside' # note`: "single # inside",
	} {
		got, ok := envValue(raw)
		if raw == `'it''s'` {
			is.True(!ok) // text after the closing quote that is not a comment
			continue
		}
		is.True(ok)
		is.Equal(got, want)
	}
	_, ok := envValue(`"unterminated`)
	is.True(!ok)
}

// TestReloadAppliesANewCredentialAndKeepsTheOldOnABrokenFile: a running serve
// with a wrong token fails; the fixed env file is applied when it changes
// (in-flight requests keep theirs), a broken one keeps the configuration in
// force and says why, a setting that cannot change live is named, and SIGHUP
// reloads too — without a key file, where it used to end the process.
func TestReloadAppliesANewCredentialAndKeepsTheOldOnABrokenFile(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	file := writeEnvFile(t, "", accessTokenEnv(emu, "wrong-token-0123456789")...)
	s := serveEnvFile(t, emu, file, true)
	status, code := chatStatus(t, s, testKey)
	is.Equal(status, 502)
	is.Equal(code, "upstream_auth_failed")

	writeEnvFile(t, file, append(accessTokenEnv(emu, testToken), "MAX_TOOLS=3")...) // the rotated credential
	waitLog(t, s, `"msg":"configuration reloaded","reason":"env_file_changed","applied":"POSTMAN_ACCESS_TOKEN","restart_needed":"MAX_TOOLS"`)
	status, _ = chatStatus(t, s, testKey)
	is.Equal(status, 200) // the new token is in force without a restart

	writeEnvFile(t, file, append(accessTokenEnv(emu, "another-token-0123456789"), "LOG_LEVEL=loud")...)
	waitLog(t, s, `"msg":"configuration reload refused; the previous configuration stays in force"`)
	if !strings.Contains(s.logs.String(), "LOG_LEVEL: must be debug, info, warn or error") {
		t.Fatalf("the refusal does not say why:\n%s", s.logs.String())
	}
	status, _ = chatStatus(t, s, testKey)
	is.Equal(status, 200) // the broken file changed nothing

	writeEnvFile(t, file, append(accessTokenEnv(emu, testToken), "PROVIDER_API_KEY=sk-rotated-key-0123456789")[1:]...)
	is.NoErr(syscall.Kill(os.Getpid(), syscall.SIGHUP)) // SIGHUP: reload now
	waitLog(t, s, `"applied":"PROVIDER_API_KEY"`)
	status, _ = chatStatus(t, s, "sk-rotated-key-0123456789")
	is.Equal(status, 200)
	status, _ = chatStatus(t, s, testKey)
	is.Equal(status, 401) // the old key is gone
	select {
	case err := <-s.done:
		t.Fatalf("serve ended on SIGHUP: %v", err)
	default:
	}
	for _, secret := range []string{"wrong-token-0123456789", "another-token-0123456789", testToken, "sk-rotated-key-0123456789"} {
		is.True(!strings.Contains(s.logs.String(), secret)) // old and new secrets stay out of the log
	}
}

// TestLivezAndReadyzOfARunningServe: both answer without a key; /readyz
// names its checks and reports upstream_verified without requiring it, and
// PROBE_REQUIRED_FOR_READY makes it required.
func TestLivezAndReadyzOfARunningServe(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	s := serveWith(t, emu, "access_token", nil)
	resp := s.do(t, "GET", "/livez", nil, "Authorization", "")
	is.Equal(resp.StatusCode, 200)
	resp = s.do(t, "GET", "/readyz", nil, "Authorization", "")
	is.Equal(resp.StatusCode, 200)
	var body struct {
		Status           string            `json:"status"`
		Checks           map[string]string `json:"checks"`
		UpstreamVerified bool              `json:"upstream_verified"`
	}
	is.NoErr(json.NewDecoder(resp.Body).Decode(&body))
	is.Equal(body.Status, "ready")
	is.Equal(body.Checks, map[string]string{"draining": "ok", "store": "ok", "keys": "ok"})
	is.Equal(body.UpstreamVerified, false)

	strict := serveWith(t, emu, "access_token", map[string]string{"PROBE_REQUIRED_FOR_READY": "true"})
	resp = strict.do(t, "GET", "/readyz", nil, "Authorization", "")
	is.Equal(resp.StatusCode, 503)
	is.NoErr(json.NewDecoder(resp.Body).Decode(&body))
	is.Equal(body.Checks["upstream_verified"], "no valid probe report (PROBE_REPORT)")
}

// TestKeysNewIntoAMissingDirectoryWorksAtOnceInARunningServe: keys new
// creates the directory (0700) and leaves no lock file; the key it prints is
// served by a running gateway on its first request, not after a poll.
func TestKeysNewIntoAMissingDirectoryWorksAtOnceInARunningServe(t *testing.T) {
	is := is.New(t)
	dir := filepath.Join(t.TempDir(), "config", "pmgate")
	file := filepath.Join(dir, "keys.json")
	first := newSlotKey(t, file, "--id", "first")
	st, err := os.Stat(dir)
	is.NoErr(err)
	is.Equal(st.Mode().Perm(), os.FileMode(0o700))
	_, err = os.Stat(file + ".lock")
	is.True(os.IsNotExist(err)) // no lock stays behind
	_, err = keysCmd(t, file, "new", "--max-concurrent", "0")
	is.True(err != nil) // outside the documented 1–4096
	is.Equal(exitCode(err), 2)

	s := serve(t, "access_token", map[string]string{"PROVIDER_API_KEY": "", "PROVIDER_KEYS_FILE": file})
	status, _ := chatStatus(t, s, first)
	is.Equal(status, 200)
	for i := range 5 {
		key := newSlotKey(t, file, "--id", fmt.Sprintf("new-%d", i))
		status, _ = chatStatus(t, s, key)
		is.Equal(status, 200) // at once
	}
	status, _ = chatStatus(t, s, "pmg-"+strings.Repeat("x", 43))
	is.Equal(status, 401)
}

// TestABusyPortNamesTheRemedy: the second gateway on a port in use says so
// and names --port 0 / PROVIDER_PORT.
func TestABusyPortNamesTheRemedy(t *testing.T) {
	is := is.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	env := map[string]string{"PROVIDER_PORT": port, "PROVIDER_API_KEY": testKey, "PROVIDER_MODELS": testModel,
		"POSTMAN_TRANSPORT_STRATEGY": "access_token", "POSTMAN_WORKSPACE_ID": testWorkspace, "POSTMAN_MODEL_MAP": testModel + "=GPT_55",
		"POSTMAN_ACCESS_TOKEN": testToken, "POSTMAN_ORIGIN": "https://127.0.0.1:1"}
	err = run(t.Context(), []string{"serve"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "is already in use"))
	is.True(strings.Contains(err.Error(), "--port 0"))
	is.True(strings.Contains(err.Error(), "PROVIDER_PORT"))
}

// TestServePrintsABannerOnATerminalOnly: the banner names the base URL, the
// control page, the store and the strategy; a pipe gets only the JSON log.
func TestServePrintsABannerOnATerminalOnly(t *testing.T) {
	is := is.New(t)
	cfg := config{adminEnabled: true, store: "memory"}
	cfg.upstream.Strategy = "web_session"
	cfg.request.models = []string{"gpt-5.5"}
	var b bytes.Buffer
	printBanner(&b, cfg, "127.0.0.1:8788")
	for _, want := range []string{"base URL  http://127.0.0.1:8788/v1", "admin     http://127.0.0.1:8788/admin",
		"store     memory", "strategy  web_session", "/readyz"} {
		is.True(strings.Contains(b.String(), want))
	}
	is.True(!isTerminal(&b))
	f, err := os.CreateTemp(t.TempDir(), "out")
	is.NoErr(err)
	defer f.Close()
	is.True(!isTerminal(f)) // a file is not a terminal
}

// TestTheDemoKeyCanBePinned: --key (or DEMO_API_KEY) fixes the demo's key, so
// a client configured against it survives a restart.
func TestTheDemoKeyCanBePinned(t *testing.T) {
	is := is.New(t)
	for _, c := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"--key", "sk-pinned-demo-key-0123"}, nil},
		{nil, map[string]string{"DEMO_API_KEY": "sk-pinned-demo-key-0123"}},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		out := &syncBuffer{}
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, append([]string{"demo", "--port", "0"}, c.args...), func(k string) string { return c.env[k] }, out, io.Discard)
		}()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(out.String(), "API key") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		is.True(strings.Contains(out.String(), "API key   sk-pinned-demo-key-0123"))
		base := regexp.MustCompile(`base URL  (\S+)`).FindStringSubmatch(out.String())[1]
		req, _ := http.NewRequest("GET", base+"/models/pmgate-demo", nil)
		req.Header.Set("Authorization", "Bearer sk-pinned-demo-key-0123")
		resp, err := http.DefaultClient.Do(req)
		is.NoErr(err)
		resp.Body.Close()
		is.Equal(resp.StatusCode, 200) // the pinned key and the documented model
		cancel()
		is.NoErr(<-done)
	}
	err := run(t.Context(), []string{"demo", "--key", "short"}, noEnv, io.Discard, io.Discard)
	is.Equal(exitCode(err), 2)
}

// TestOpenAIGoRetrievesAModel: the SDK's models.retrieve (GET
// /v1/models/{id}) returns the configured model, and an unknown id is the
// SDK's 404 with model_not_found naming the model that works.
func TestOpenAIGoRetrievesAModel(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", nil)
	client := openai.NewClient(option.WithBaseURL(s.base+"/v1"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
	m, err := client.Models.Get(t.Context(), testModel)
	is.NoErr(err)
	is.Equal(m.ID, testModel)
	is.Equal(string(m.Object), "model")
	_, err = client.Models.Get(t.Context(), "gpt-4o")
	var apiErr *openai.Error
	is.True(errors.As(err, &apiErr))
	is.Equal(apiErr.StatusCode, 404)
	is.Equal(apiErr.Code, "model_not_found")
	is.True(strings.Contains(apiErr.Message, "Use one of "+testModel+"."))
}

// TestAFailingProbeNamesItsCause: a live probe whose upstream name does not
// resolve says so in its first FAIL line, with the CONNECT.md hint; the
// report records the cause per phase, and a request that never left is not
// counted as a dispatch.
func TestAFailingProbeNamesItsCause(t *testing.T) {
	is := is.New(t)
	out := filepath.Join(t.TempDir(), "probe.json")
	env := map[string]string{"PROVIDER_API_KEY": testKey, "PROVIDER_MODELS": testModel,
		"POSTMAN_TRANSPORT_STRATEGY": "web_session", "POSTMAN_SESSION_COOKIE": testCookie,
		"POSTMAN_WORKSPACE_SUBDOMAIN": "no-such-team", "POSTMAN_WORKSPACE_ID": testWorkspace, "POSTMAN_MODEL_MAP": testModel + "=GPT_55"}
	dnsFails := postman.WithDialContext(func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: "no-such-team.postman.co", IsNotFound: true}}
	})
	var stdout, stderr bytes.Buffer
	p := program{getenv: func(k string) string { return env[k] }, stdout: &stdout, stderr: &stderr, upstream: []postman.Option{dnsFails}}
	err := p.run(t.Context(), []string{"probe", "--live", "--out", out})
	is.True(err != nil)
	var first string
	for _, l := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(l, "FAIL  ") {
			first = l
			break
		}
	}
	is.True(strings.Contains(first, "cause: dns_not_found"))        // the cause, on the first failing line
	is.True(strings.Contains(first, "POSTMAN_WORKSPACE_SUBDOMAIN")) // and the hint
	raw, err := os.ReadFile(out)
	is.NoErr(err)
	var rep probeReport
	is.NoErr(json.Unmarshal(raw, &rep))
	is.Equal(rep.Text.Cause, "dns_not_found")
	is.Equal(rep.Text.UpstreamDispatches, 0) // nothing left the machine
	is.Equal(rep.Text.Requests[0].Upstream[0].Cause, "dns_not_found")
	is.True(rep.Text.Requests[0].Upstream[0].NotSent)
}

// otlpReceiver is an in-process OTLP/HTTP traces receiver on loopback.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "bad", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// TestTracesReachAnOTLPReceiver: with OTEL_EXPORTER_OTLP_ENDPOINT set, a chat
// turn is one request span with admission, dispatch and stream children, all
// carrying the request id; the attributes are closed-set values only (no
// content, key, cookie or model text of the client), and a refused request
// marks its span failed with the stable code.
func TestTracesReachAnOTLPReceiver(t *testing.T) {
	is := is.New(t)
	rcv := &otlpReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	s := serve(t, "web_session", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
	resp := s.post(t, userBody("secret-user-text hello", false, ""))
	is.Equal(resp.StatusCode, 200)
	rid := resp.Header.Get("x-request-id")
	resp = s.post(t, userBody("hi", false, ""), "Authorization", "Bearer wrong-key-0123456789")
	is.Equal(resp.StatusCode, 401)
	s.cancel() // shutdown flushes the batch
	<-s.done
	s.done <- nil // for the cleanup's receive

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	byName := map[string][]*tracepb.Span{}
	for _, sp := range rcv.spans {
		byName[sp.Name] = append(byName[sp.Name], sp)
		raw, _ := proto.Marshal(sp)
		for _, secret := range []string{"secret-user-text", testKey, testCookie, "wrong-key-0123456789"} {
			is.True(!bytes.Contains(raw, []byte(secret))) // no content, key or cookie in any span
		}
	}
	attr := func(sp *tracepb.Span, k string) string {
		for _, a := range sp.Attributes {
			if a.Key == k {
				switch v := a.Value.Value.(type) {
				case *commonpb.AnyValue_StringValue:
					return v.StringValue
				case *commonpb.AnyValue_IntValue:
					return fmt.Sprint(v.IntValue)
				case *commonpb.AnyValue_BoolValue:
					return fmt.Sprint(v.BoolValue)
				}
			}
		}
		return ""
	}
	var root *tracepb.Span
	for _, sp := range byName["pmgate.request"] {
		if attr(sp, "pmgate.request_id") == rid {
			root = sp
		}
	}
	is.True(root != nil) // the turn's request span
	is.Equal(attr(root, "http.route"), "/v1/chat/completions")
	is.Equal(attr(root, "http.response.status_code"), "200")
	for _, name := range []string{"pmgate.admission", "pmgate.upstream.dispatch", "pmgate.upstream.stream"} {
		is.Equal(len(byName[name]), 1) // one of each, for the one turn that got that far
		child := byName[name][0]
		is.True(bytes.Equal(child.TraceId, root.TraceId))
		is.Equal(attr(child, "pmgate.request_id"), rid) // the request id on every span
	}
	is.True(bytes.Equal(byName["pmgate.admission"][0].ParentSpanId, root.SpanId))
	is.Equal(attr(byName["pmgate.upstream.dispatch"][0], "pmgate.upstream.chat_type"), "USER_QUERY")
	for _, name := range []string{"pmgate.upstream.dispatch", "pmgate.upstream.stream"} {
		is.True(byName[name][0].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR) // a clean end is a success, not a failed span
		is.Equal(attr(byName[name][0], "pmgate.code"), "")
	}
	refused := 0
	for _, sp := range byName["pmgate.request"] {
		if attr(sp, "pmgate.code") == "invalid_api_key" {
			refused++
			is.Equal(sp.Status.Code, tracepb.Status_STATUS_CODE_ERROR)
		}
	}
	is.Equal(refused, 1)
}

// TestAReloadLetsARunningStreamFinishOnTheOldCredential: a stream that started
// before the credential changed ends normally (it keeps the adapter it
// started with); the next request uses the new credential.
func TestAReloadLetsARunningStreamFinishOnTheOldCredential(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t, func(c *emulator.Config) { c.SlowDelay = 150 * time.Millisecond })
	file := writeEnvFile(t, "", accessTokenEnv(emu, testToken)...)
	s := serveEnvFile(t, emu, file, true)
	resp := s.post(t, userBody("a long answer #scenario=slow_stream", true, ""))
	is.Equal(resp.StatusCode, 200)
	first := make([]byte, 1)
	_, err := io.ReadFull(resp.Body, first) // the stream is running
	is.NoErr(err)
	writeEnvFile(t, file, accessTokenEnv(emu, "revoked-token-0123456789")...)
	is.NoErr(syscall.Kill(os.Getpid(), syscall.SIGHUP))
	waitLog(t, s, `"applied":"POSTMAN_ACCESS_TOKEN"`)
	is.True(!strings.Contains(s.logs.String(), `"msg":"request"`)) // the stream was still running at the reload
	rest, err := io.ReadAll(resp.Body)
	is.NoErr(err)
	is.True(strings.Contains(string(rest), `"finish_reason":"stop"`)) // finished on the values it started with
	is.True(strings.HasSuffix(strings.TrimSpace(string(rest)), "data: [DONE]"))
	status, code := chatStatus(t, s, testKey)
	is.Equal(status, 502) // the next request uses the new (revoked) token
	is.Equal(code, "upstream_auth_failed")
}

// TestTheWebSessionCookieRotatesWithoutARestart: the expired cookie fails; the
// new one, saved in the env file, holds for the next request.
func TestTheWebSessionCookieRotatesWithoutARestart(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	webEnv := func(cookie string) []string {
		return []string{"PROVIDER_PORT=0", "PROVIDER_API_KEY=" + testKey, "PROVIDER_MODELS=" + testModel,
			"POSTMAN_TRANSPORT_STRATEGY=web_session", "POSTMAN_WORKSPACE_ID=" + testWorkspace,
			"POSTMAN_MODEL_MAP=" + testModel + "=GPT_55", "POSTMAN_WORKSPACE_SUBDOMAIN=" + testSubdomain,
			"POSTMAN_SESSION_COOKIE=" + cookie + "   # copied from the browser"}
	}
	file := writeEnvFile(t, "", webEnv("expired-cookie-0123456789")...)
	s := serveEnvFile(t, emu, file, true)
	status, code := chatStatus(t, s, testKey)
	is.Equal(status, 502)
	is.True(strings.HasPrefix(code, "upstream_")) // the expired session
	writeEnvFile(t, file, webEnv(testCookie)...)
	waitLog(t, s, `"applied":"POSTMAN_SESSION_COOKIE"`)
	status, _ = chatStatus(t, s, testKey)
	is.Equal(status, 200) // the inline comment is not part of the cookie, and the new one holds
	is.True(!strings.Contains(s.logs.String(), "expired-cookie-0123456789"))
	is.True(!strings.Contains(s.logs.String(), testCookie))
}

// TestTheTrustSettingsAreCheckedAtStartUp: SSL_CERT_DIR gives the
// certificates of its files; a file or directory that gives none is refused
// with the variable's name and not its path.
func TestTheTrustSettingsAreCheckedAtStartUp(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	dir := t.TempDir()
	pem, err := os.ReadFile(emu.CAFile())
	is.NoErr(err)
	is.NoErr(os.WriteFile(filepath.Join(dir, "proxy-ca.pem"), pem, 0o600))
	pool, err := rootPool("", dir)
	is.NoErr(err)
	is.True(pool != nil)
	empty := t.TempDir()
	_, err = rootPool("", empty)
	is.True(err != nil && strings.Contains(err.Error(), "SSL_CERT_DIR: holds no PEM certificate"))
	_, err = rootPool(filepath.Join(empty, "secret-path.pem"), "")
	is.True(err != nil && strings.Contains(err.Error(), "SSL_CERT_FILE: cannot be read"))
	is.True(!strings.Contains(err.Error(), "secret-path"))
	s := serveEnvFile(t, emu, writeEnvFile(t, "", append(accessTokenEnv(emu, testToken), "SSL_CERT_DIR="+dir)...), false)
	status, _ := chatStatus(t, s, testKey)
	is.Equal(status, 200) // the directory named only in the env file is trusted
}

// TestGatewayReadyIsTheHealthCheck: `gateway ready` exits 0 against a ready
// gateway and 1 when nothing answers.
func TestGatewayReadyIsTheHealthCheck(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", nil)
	var out bytes.Buffer
	is.NoErr(run(t.Context(), []string{"ready", "--url", s.base + "/readyz"}, noEnv, &out, io.Discard))
	is.True(strings.Contains(out.String(), `"status":"ready"`))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	addr := ln.Addr().String()
	ln.Close() // a port nobody listens on
	err = run(t.Context(), []string{"ready", "--url", "http://" + addr + "/readyz"}, noEnv, io.Discard, io.Discard)
	is.Equal(exitCode(err), 1)
	for _, port := range []string{"80a", "+80", "65536"} {
		env := func(k string) string {
			if k == "PROVIDER_PORT" {
				return port
			}
			return ""
		}
		err = run(t.Context(), []string{"ready"}, env, io.Discard, io.Discard)
		is.True(errs.Has(err, errs.ConfigInvalid))                                                              // serve's rule for PROVIDER_PORT
		is.True(strings.Contains(errs.Redact(err), "PROVIDER_PORT: must be a decimal integer from 0 to 65535")) // in the one wording
	}
}
