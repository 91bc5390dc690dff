package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/internal/testkit"
)

const (
	testKey       = "sk-test-0123456789abcdef"
	testCookie    = "cookie-VALUE-e2e-0001"
	testToken     = "token-VALUE-e2e-0002"
	testSubdomain = "e2e-team"
	testWorkspace = "ws-e2e"
	testModel     = "gpt-test"
)

// syncBuffer is a goroutine-safe buffer for a command's output.
type syncBuffer = testkit.SyncBuffer

// served is a gateway started through run, against an in-test emulator.
type served struct {
	base   string
	emu    *emulator.Server
	logs   *gatewayLogs
	cancel context.CancelFunc
	done   chan error
}

// gatewayLogs is a served gateway's log. The gateway writes a request's
// access line after its response has gone out, so String first waits (at
// most 5 s) until every answered request's line is written: a test that read
// a response finds its line, as a reader of the log file would a moment
// later. The rows the machines applied are logged by a queued subscriber of
// the gateway's events: String hands it every event observed so far
// (Observers.Flush, a barrier), so no test polls the log for them.
type gatewayLogs struct {
	buf *syncBuffer
	ln  atomic.Pointer[httpapi.Listener]
	gw  atomic.Pointer[gateway] // the running gateway (a test logs through its logger)
}

// newGatewayLogs returns the log of the program p will run, and sets p's
// started hook.
func newGatewayLogs(p *program) *gatewayLogs {
	l := &gatewayLogs{buf: &syncBuffer{}}
	p.stderr = l.buf
	p.started = func(g *gateway) { l.ln.Store(g.ln.(*httpapi.Listener)); l.gw.Store(g) }
	return l
}

func (l *gatewayLogs) String() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ln := l.ln.Load(); ln != nil {
		_ = ln.Settled(ctx)
	}
	if g := l.gw.Load(); g != nil {
		_ = g.events.Flush(ctx)
	}
	return l.buf.String()
}

// serve starts `gateway serve` through run with the given strategy and extra
// environment, wired to a fresh emulator.
func serve(t *testing.T, strategy string, extra map[string]string) *served {
	t.Helper()
	return serveWith(t, newEmulator(t), strategy, extra)
}

// newEmulator starts an emulator for the test's gateways.
// mutate may change the emulator's configuration (limits, profile).
func newEmulator(t *testing.T, mutate ...func(*emulator.Config)) *emulator.Server {
	t.Helper()
	cfg := emulator.Config{WorkspaceID: testWorkspace, Subdomain: testSubdomain,
		SessionCookie: testCookie, AccessToken: testToken, Models: map[string]string{"GPT_55": "GPT_55"}, SlowDelay: 300 * time.Millisecond}
	for _, m := range mutate {
		m(&cfg)
	}
	emu, err := emulator.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	return emu
}

// emulatorEnv is the environment and adapter options of a gateway wired to
// emu: the test credentials, the strategy and extra settings.
func emulatorEnv(emu *emulator.Server, strategy string, extra map[string]string) (map[string]string, []postman.Option) {
	env := map[string]string{
		"PROVIDER_PORT": "0", "PROVIDER_API_KEY": testKey, "PROVIDER_MODELS": testModel,
		"POSTMAN_TRANSPORT_STRATEGY": strategy, "POSTMAN_WORKSPACE_ID": testWorkspace, "POSTMAN_MODEL_MAP": testModel + "=GPT_55",
	}
	if strategy == "web_session" {
		env["POSTMAN_SESSION_COOKIE"], env["POSTMAN_WORKSPACE_SUBDOMAIN"] = testCookie, testSubdomain
	} else {
		env["POSTMAN_ACCESS_TOKEN"], env["POSTMAN_ORIGIN"] = testToken, emu.Origin()
	}
	for k, v := range extra {
		env[k] = v
	}
	host := testSubdomain + ".postman.co:443"
	upstream := []postman.Option{postman.WithRootCAs(emu.CertPool()),
		postman.WithDialContext(func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != host && "https://"+addr != emu.Origin() {
				return nil, fmt.Errorf("test dialer: unexpected %s", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, emu.Addr())
		})}
	return env, upstream
}

// serveWith starts `gateway serve` through run against emu.
func serveWith(t *testing.T, emu *emulator.Server, strategy string, extra map[string]string) *served {
	t.Helper()
	env, upstream := emulatorEnv(emu, strategy, extra)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	p := program{getenv: func(k string) string { return env[k] }, stdout: io.Discard, upstream: upstream}
	logs := newGatewayLogs(&p)
	go func() { done <- p.run(ctx, []string{"serve"}) }()
	addrRE := regexp.MustCompile(`"addr":"([0-9.:]+)"`)
	deadline := time.Now().Add(10 * time.Second)
	var base string
	for base == "" && time.Now().Before(deadline) {
		if m := addrRE.FindStringSubmatch(logs.String()); m != nil {
			base = "http://" + m[1]
		} else if p := env["PROVIDER_PORT"]; p != "0" { // a fixed port: no need for the (info) listening line
			if resp, err := http.Get("http://127.0.0.1:" + p + "/health"); err == nil {
				resp.Body.Close()
				base = "http://127.0.0.1:" + p
			}
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended early: %v\n%s", err, logs.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if base == "" {
		t.Fatalf("gateway did not start:\n%s", logs.String())
	}
	s := &served{base: base, emu: emu, logs: logs, cancel: cancel, done: done}
	t.Cleanup(func() {
		cancel()
		<-done
		for _, secret := range []string{testKey, testCookie, testToken} {
			if strings.Contains(logs.String(), secret) {
				t.Errorf("a secret reached the logs")
			}
		}
		checkLogLines(t, logs.String()) // every line parses as strict JSON (no duplicate key)
	})
	return s
}

func (s *served) post(t *testing.T, body string, header ...string) *http.Response {
	t.Helper()
	return s.do(t, "POST", "/v1/chat/completions", strings.NewReader(body), append([]string{"Content-Type", "application/json"}, header...)...)
}

// do sends one request with the test key (header pairs may replace it) and
// closes the response body at the end of the test.
func (s *served) do(t *testing.T, method, path string, body io.Reader, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, s.base+path, body)
	req.Header.Set("Authorization", "Bearer "+testKey)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func userBody(text string, stream bool, extra string) string {
	b, _ := json.Marshal(text)
	return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%s}]%s}`, testModel, stream, b, extra)
}

type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

// sseEvents reads every data payload of an SSE body.
func sseEvents(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "data: ") {
			t.Fatalf("SSE line is not a data line: %q", line)
		}
		out = append(out, strings.TrimPrefix(line, "data: "))
	}
	return out
}

var strategies = []string{"access_token", "web_session"}

func TestATextTurnAsJSONThroughEachStrategy(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			resp := s.post(t, userBody("Hello there", false, ""))
			is.Equal(resp.StatusCode, 200) // a proven end is a success
			is.True(resp.Header.Get("x-request-id") != "")
			var c struct {
				Object  string `json:"object"`
				Model   string `json:"model"`
				Choices []struct {
					Message      struct{ Role, Content string } `json:"message"`
					FinishReason string                         `json:"finish_reason"`
				} `json:"choices"`
				Usage *struct {
					TotalTokens int `json:"total_tokens"`
				} `json:"usage"`
			}
			is.NoErr(json.NewDecoder(resp.Body).Decode(&c))
			is.Equal(c.Object, "chat.completion")                                            // OpenAI shape
			is.Equal(c.Model, testModel)                                                     // the public model id
			is.True(strings.Contains(c.Choices[0].Message.Content, "You said: Hello there")) // the emulator's reply
			is.Equal(c.Choices[0].FinishReason, "stop")
			is.True(c.Usage != nil && c.Usage.TotalTokens > 0) // upstream token counts
			is.Equal(s.emu.Count(emulator.KindUserQuery), 1)   // one upstream request
		})
	}
}

func TestAStreamedTextTurnFollowsTheStreamingRules(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			resp := s.post(t, userBody("Stream please", true, `,"stream_options":{"include_usage":true}`))
			is.Equal(resp.StatusCode, 200)
			is.True(strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"))
			evs := sseEvents(t, resp.Body)
			is.Equal(evs[len(evs)-1], "[DONE]") // a proven end closes with [DONE]
			var ids = map[string]bool{}
			roles, finishes := 0, 0
			var text strings.Builder
			for i, e := range evs[:len(evs)-1] {
				var ch map[string]any
				is.NoErr(json.Unmarshal([]byte(e), &ch))
				_, hasErr := ch["error"]
				is.True(!hasErr) // no error key on normal chunks
				ids[ch["id"].(string)] = true
				choices := ch["choices"].([]any)
				if len(choices) == 0 {
					is.Equal(i, len(evs)-2)     // the usage chunk is last before [DONE]
					is.True(ch["usage"] != nil) // and carries usage
					continue
				}
				is.Equal(ch["usage"], nil) // usage null elsewhere
				c := choices[0].(map[string]any)
				d := c["delta"].(map[string]any)
				if _, ok := d["role"]; ok {
					roles++
					is.Equal(i, 0) // the role delta comes first
				}
				if s, ok := d["content"].(string); ok {
					text.WriteString(s)
				}
				if c["finish_reason"] != nil {
					finishes++
					is.Equal(c["finish_reason"], "stop")
				}
			}
			is.Equal(len(ids), 1) // one id for the whole stream
			is.Equal(roles, 1)    // exactly one role delta
			is.Equal(finishes, 1) // one finish
			is.True(strings.Contains(text.String(), "You said: Stream please"))
		})
	}
}

func TestFailClosedOutcomesAreStableErrors(t *testing.T) {
	cases := []struct{ scenario, code string }{
		{"ambiguous_eof", "upstream_completion_ambiguous"},
		{"truncated_frame", "upstream_incomplete_stream"},
		{"failure_after_text", "upstream_failure"},
		{"unknown_event", "upstream_unverified_event_shape"},
		{"model_mismatch", "upstream_model_mismatch"},
	}
	for _, st := range strategies {
		s := serve(t, st, nil)
		for _, c := range cases {
			if st == "access_token" && c.scenario == "ambiguous_eof" {
				c.code = "upstream_incomplete_stream" // the legacy rule: EOF before [DONE]
			}
			t.Run(st+"/"+c.scenario+"/json", func(t *testing.T) {
				is := is.New(t)
				resp := s.post(t, userBody("#scenario="+c.scenario, false, ""))
				is.Equal(resp.StatusCode, 502) // never a success
				is.Equal(resp.Header.Get("x-should-retry"), "false")
				var e errorBody
				is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
				is.Equal(e.Error.Code, c.code) // the stable code
			})
			t.Run(st+"/"+c.scenario+"/sse", func(t *testing.T) {
				is := is.New(t)
				resp := s.post(t, userBody("#scenario="+c.scenario, true, ""))
				if resp.StatusCode != 200 { // nothing was shown yet: a plain error
					is.Equal(resp.StatusCode, 502)
					var e errorBody
					is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
					is.Equal(e.Error.Code, c.code)
					return
				}
				evs := sseEvents(t, resp.Body)
				last := evs[len(evs)-1]
				is.True(last != "[DONE]") // no [DONE] after a failure
				var e errorBody
				is.NoErr(json.Unmarshal([]byte(last), &e))
				is.Equal(e.Error.Code, c.code) // one error event with the code
				for _, ev := range evs {
					is.True(!strings.Contains(ev, `"finish_reason":"stop"`)) // and no finish
				}
			})
		}
	}
}

func TestAuthFailuresAreRefusedBeforeTheUpstream(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", nil)
	resp := s.post(t, userBody("hi", false, ""), "Authorization", "Bearer wrong-key-0123456789")
	is.Equal(resp.StatusCode, 401)
	var e errorBody
	is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
	is.Equal(e.Error.Code, "invalid_api_key")
	is.Equal(s.emu.Count(emulator.KindUserQuery), 0) // nothing reached the upstream
}

func TestValidationRefusalsNeverReachTheUpstream(t *testing.T) {
	s := serve(t, "web_session", nil)
	cases := map[string]struct {
		body   string
		status int
		code   string
	}{
		"n > 1":              {userBody("hi", false, `,"n":2`), 400, "unsupported_parameter"},
		"image part":         {fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, testModel), 400, "unsupported_parameter"},
		"unknown model":      {`{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, 404, "model_not_found"},
		"malformed JSON":     {`{"model":`, 400, "invalid_request"},
		"not keyword":        {userBody("hi", false, `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string","not":{"const":"x"}}}}}}]`), 400, "unsupported_parameter"},
		"unverified pattern": {userBody("hi", false, `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","pattern":"^(?!x)"}}}`), 400, "unsupported_parameter"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			resp := s.post(t, c.body)
			is.Equal(resp.StatusCode, c.status)
			var e errorBody
			is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
			is.Equal(e.Error.Code, c.code)
			is.Equal(resp.Header.Get("x-should-retry"), "false")
		})
	}
	if n := len(s.emu.Requests()); n != 0 {
		t.Fatalf("the upstream saw %d requests vs expected none", n)
	}
}

func TestTheConcurrencyLimitAnswers429WithRetryAfter(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", map[string]string{"MAX_CONCURRENT_REQUESTS": "1"})
	slow := make(chan *http.Response, 1)
	go func() { slow <- s.post(t, userBody("#scenario=slow_stream", true, "")) }()
	var resp *http.Response
	for range 100 {
		time.Sleep(20 * time.Millisecond)
		resp = s.post(t, userBody("hi", false, ""))
		if resp.StatusCode == 429 {
			break
		}
	}
	is.Equal(resp.StatusCode, 429) // the second concurrent request is refused
	var e errorBody
	is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
	is.Equal(e.Error.Code, "concurrency_limit_exceeded")
	is.True(resp.Header.Get("retry-after") != "") // with a retry hint
	<-slow
}

func TestAClientAbortEndsTheRequestAndTheGatewayStaysHealthy(t *testing.T) {
	is := is.New(t)
	s := serve(t, "web_session", nil)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "POST", s.base+"/v1/chat/completions", strings.NewReader(userBody("#scenario=slow_stream", true, "")))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	is.Equal(resp.StatusCode, 200) // the stream started
	buf := make([]byte, 64)
	_, err = resp.Body.Read(buf)
	is.NoErr(err) // the stream started
	cancel()
	resp.Body.Close()
	time.Sleep(100 * time.Millisecond)
	ok := s.post(t, userBody("after abort", false, ""))
	is.Equal(ok.StatusCode, 200) // the gateway keeps serving
}

func TestGracefulShutdownLetsInFlightRequestsFinishAndExitsZero(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", nil)
	got := make(chan []string, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.base+"/v1/chat/completions", strings.NewReader(userBody("#scenario=slow_stream", true, "")))
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- nil
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var evs []string
		for _, l := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(l, "data: "); ok {
				evs = append(evs, p)
			}
		}
		got <- evs
	}()
	time.Sleep(150 * time.Millisecond)
	s.cancel() // SIGINT/SIGTERM
	evs := <-got
	is.True(len(evs) > 0)
	is.Equal(evs[len(evs)-1], "[DONE]") // the in-flight stream finished normally
	select {
	case err := <-s.done:
		is.NoErr(err) // and serve returned cleanly (exit 0)
		s.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return")
	}
	_, err := http.Get(s.base + "/health")
	is.True(err != nil) // no longer accepting
}

func TestCheckConfigRefusalsHaveStableCodesAndNoSecrets(t *testing.T) {
	is := is.New(t)
	env := map[string]string{"PROVIDER_API_KEY": testKey, "PROVIDER_MODELS": testModel, "POSTMAN_TRANSPORT_STRATEGY": "web_session",
		"POSTMAN_SESSION_COOKIE": testCookie, "POSTMAN_ACCESS_TOKEN": testToken, "POSTMAN_WORKSPACE_SUBDOMAIN": testSubdomain,
		"POSTMAN_WORKSPACE_ID": testWorkspace, "POSTMAN_MODEL_MAP": testModel + "=GPT_55"}
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"check-config"}, func(k string) string { return env[k] }, &out, &errOut)
	is.Equal(exitCode(err), 78)                                   // configuration refused
	is.True(strings.HasPrefix(describe(err), "config_invalid: ")) // with the stable code
	is.True(!strings.Contains(describe(err), testCookie))         // and no secret
	is.True(!strings.Contains(describe(err), testToken))
	delete(env, "POSTMAN_ACCESS_TOKEN")
	out.Reset()
	is.NoErr(run(t.Context(), []string{"check-config"}, func(k string) string { return env[k] }, &out, &errOut))
	is.True(strings.Contains(out.String(), "strategy: web_session")) // the redacted summary
	is.True(!strings.Contains(out.String(), testCookie))
	is.True(!strings.Contains(out.String(), testKey))
}

func TestUnknownCommandsAreUsageErrors(t *testing.T) {
	is := is.New(t)
	err := run(t.Context(), []string{"frobnicate"}, func(string) string { return "" }, io.Discard, io.Discard)
	is.True(errors.Is(err, errUsage)) // usage error
	is.Equal(exitCode(err), 2)
}
