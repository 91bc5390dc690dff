package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/domain/errs"
)

// strictJSONLine parses one log line with a decoder that rejects what lenient
// parsers accept silently: a duplicate key in any object, trailing data, and
// anything that is not one JSON object.
func strictJSONLine(line string) error {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var walk func(depth int) error
	walk = func(depth int) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key := k.(string)
				if seen[key] {
					return fmt.Errorf("duplicate key %q", key)
				}
				seen[key] = true
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(depth + 1); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		if depth == 0 {
			return fmt.Errorf("not an object")
		}
		return nil
	}
	if err := walk(0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the object")
	}
	return nil
}

// checkLogLines fails t when a log line of a gateway run is not strict JSON.
// serveWith runs it over every gateway the end-to-end suite starts.
func checkLogLines(t *testing.T, logs string) {
	t.Helper()
	for i, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if line == "" {
			continue
		}
		if err := strictJSONLine(line); err != nil {
			t.Errorf("log line %d is not strict JSON: %v", i+1, err)
		}
	}
}

func TestStrictJSONLineRejectsDuplicateKeys(t *testing.T) {
	is := is.New(t)
	is.NoErr(strictJSONLine(`{"a":1,"b":{"a":2},"c":[{"a":1},{"a":1}]}`))           // the same key in different objects is fine
	is.True(strictJSONLine(`{"request_id":"x","msg":"m","request_id":"x"}`) != nil) // a repeated key is not
	is.True(strictJSONLine(`{"a":{"b":1,"b":2}}`) != nil)                           // nor a nested one
	is.True(strictJSONLine(`{"a":1} {"b":2}`) != nil)                               // one object per line
}

// TestUpstreamFailureLogLinesCarryOneRequestID: the upstream adapter and the
// request-id handler both know the request id; a line must carry it once.
func TestUpstreamFailureLogLinesCarryOneRequestID(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			for _, stream := range []bool{false, true} {
				resp := s.post(t, userBody("#scenario=rate_limited", stream, ""), "x-request-id", "rid-strict-1")
				_, _ = io.Copy(io.Discard, resp.Body)
				is.Equal(resp.StatusCode, 429)
			}
			n := 0
			for _, line := range strings.Split(s.logs.String(), "\n") {
				if strings.Contains(line, `"upstream request failed"`) {
					n++
					is.Equal(strings.Count(line, `"request_id"`), 1) // one request_id key
					is.NoErr(strictJSONLine(line))
				}
			}
			is.Equal(n, 2) // one failure line per request
		})
	}
}

// TestTheUpstreamsRetryAfterReachesTheClient: the emulator's rate_limited
// answers 429 with Retry-After: 7; the client sees 7, in JSON and in a stream
// that failed before its headers, through both strategies.
func TestTheUpstreamsRetryAfterReachesTheClient(t *testing.T) {
	for _, st := range strategies {
		s := serve(t, st, nil)
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", st, stream), func(t *testing.T) {
				is := is.New(t)
				resp := s.post(t, userBody("#scenario=rate_limited", stream, ""))
				is.Equal(resp.StatusCode, 429)
				is.Equal(resp.Header.Get("Retry-After"), "7") // the upstream's own delay
				var e errorBody
				is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
				is.Equal(e.Error.Code, "upstream_rate_limited")
			})
		}
	}
}

// rawRequest writes raw bytes to the gateway and returns the response.
func rawRequest(t *testing.T, addr string, raw string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	return resp
}

// openAIError asserts the OpenAI error shape with all four keys and an
// x-request-id, and returns the code.
func openAIError(t *testing.T, resp *http.Response) string {
	t.Helper()
	is := is.NewRelaxed(t)
	body, _ := io.ReadAll(resp.Body)
	is.True(resp.Header.Get("x-request-id") != "") // every answer has a request id
	is.True(strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"))
	var outer map[string]map[string]json.RawMessage
	if err := json.Unmarshal(body, &outer); err != nil {
		t.Fatalf("not the OpenAI error shape: %q", body)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := outer["error"][k]; !ok {
			t.Errorf("error key %q missing in %s", k, body)
		}
	}
	var code string
	_ = json.Unmarshal(outer["error"]["code"], &code)
	return code
}

// TestEveryAnswerHasTheOpenAIShape: net/http's own refusals, unclean paths and
// foreign hosts all answer in the OpenAI error shape with an x-request-id.
func TestEveryAnswerHasTheOpenAIShape(t *testing.T) {
	s := serve(t, "access_token", nil)
	addr := strings.TrimPrefix(s.base, "http://")
	big := strings.Repeat("a", 2<<20)
	cases := []struct {
		name, raw string
		status    int
		code      string
	}{
		{"malformed request line", "GARBAGE\r\n\r\n", 400, "invalid_request"},
		{"no Host", "GET /health HTTP/1.1\r\n\r\n", 400, "invalid_request"},
		{"headers too large", "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + big + "\r\n\r\n", 431, "request_too_large"},
		{"unknown transfer encoding", "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "invalid_request"},
		{"unsupported Expect", "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: magic\r\n\r\n", 417, "invalid_request"},
		{"double slash", "GET //health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 404, "invalid_request"},
		{"dot segment", "GET /v1/../health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 404, "invalid_request"},
		{"trailing slash", "GET /v1/models/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 404, "invalid_request"},
		{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 404, "invalid_request"},
		{"foreign Host", "GET /health HTTP/1.1\r\nHost: evil.example\r\n\r\n", 421, "host_not_allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := rawRequest(t, addr, c.raw)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if code := openAIError(t, resp); code != c.code {
				t.Errorf("code %q, want %q", code, c.code)
			}
			if resp.Header.Get("Location") != "" {
				t.Errorf("a redirect was offered")
			}
		})
	}
}

// TestForeignHostsAndOriginsAreRefusedOnEveryRoute is the DNS-rebinding
// defence end to end: every route, known or not, with or without a key.
func TestForeignHostsAndOriginsAreRefusedOnEveryRoute(t *testing.T) {
	s := serve(t, "web_session", map[string]string{"ALLOWED_HOSTS": "gw.internal"})
	routes := []struct{ method, path string }{
		{"GET", "/health"}, {"GET", "/v1/models"}, {"POST", "/v1/chat/completions"}, {"GET", "/admin"}, {"OPTIONS", "/v1/chat/completions"},
	}
	send := func(t *testing.T, method, path, host, origin string) *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), method, s.base+path, strings.NewReader(userBody("hi", false, "")))
		req.Host = host
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	noCORS := func(t *testing.T, resp *http.Response) {
		for k := range resp.Header {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				t.Errorf("CORS header %s sent", k)
			}
		}
	}
	for _, r := range routes {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			is := is.New(t)
			for _, host := range []string{"evil.example", "evil.example:" + strings.Split(s.base, ":")[2], "127.0.0.1.evil.example"} {
				resp := send(t, r.method, r.path, host, "")
				is.Equal(resp.StatusCode, 421) // a foreign Host
				is.Equal(openAIError(t, resp), "host_not_allowed")
				noCORS(t, resp)
			}
			for _, origin := range []string{"http://evil.example", "https://evil.example:8788", "null"} {
				resp := send(t, r.method, r.path, "127.0.0.1", origin)
				is.Equal(resp.StatusCode, 403) // a foreign browser Origin
				is.Equal(openAIError(t, resp), "origin_not_allowed")
				noCORS(t, resp)
			}
			for _, host := range []string{"localhost", "LOCALHOST:8788", "127.0.0.1", "127.3.4.5:1", "[::1]", "[::1]:8788", "gw.internal", "gw.internal:443"} {
				resp := send(t, r.method, r.path, host, "http://"+host)
				is.True(resp.StatusCode != 421 && resp.StatusCode != 403) // served names pass
				noCORS(t, resp)
			}
		})
	}
}

// TestASlowBodyGets408AndHoldsNoSlot: four clients trickling their bodies do
// not keep MAX_CONCURRENT_REQUESTS=4 from anyone else, and each gets 408
// request_timeout when BODY_READ_TIMEOUT_MS elapses.
func TestASlowBodyGets408AndHoldsNoSlot(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", map[string]string{"MAX_CONCURRENT_REQUESTS": "4", "BODY_READ_TIMEOUT_MS": "700"})
	addr := strings.TrimPrefix(s.base, "http://")
	body := userBody("slow body", false, "")
	type result struct {
		status int
		code   string
		took   time.Duration
	}
	results := make(chan result, 4)
	for range 4 {
		c, err := net.Dial("tcp", addr)
		is.NoErr(err)
		t.Cleanup(func() { c.Close() })
		start := time.Now()
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			testKey, len(body), body[:10])
		go func() {
			stop := time.After(5 * time.Second)
			go func() { // one byte every 200 ms, until the gateway gives up (bounded)
				for i := 10; i < len(body); i++ {
					select {
					case <-stop:
						return
					case <-time.After(200 * time.Millisecond):
					}
					if _, err := c.Write([]byte{body[i]}); err != nil {
						return
					}
				}
			}()
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				results <- result{status: -1}
				return
			}
			var e errorBody
			_ = json.NewDecoder(resp.Body).Decode(&e)
			results <- result{resp.StatusCode, e.Error.Code, time.Since(start)}
		}()
	}
	time.Sleep(150 * time.Millisecond)
	ok := s.post(t, userBody("meanwhile", false, ""))
	is.Equal(ok.StatusCode, 200) // the trickling bodies hold no concurrency slot
	for range 4 {
		r := <-results
		is.Equal(r.status, 408) // the body deadline
		is.Equal(r.code, "request_timeout")
		is.True(r.took >= 600*time.Millisecond && r.took < 3*time.Second) // at BODY_READ_TIMEOUT_MS, not later
	}
	is.Equal(s.emu.Count(emulator.KindUserQuery), 1) // only the complete request reached the upstream
}

// TestInvalidUTF8IsRefusedWithItsPath: raw invalid bytes and lone surrogates
// are not silently replaced.
func TestInvalidUTF8IsRefusedWithItsPath(t *testing.T) {
	s := serve(t, "web_session", nil)
	cases := map[string]struct{ content, param string }{
		"invalid byte":        {"\"caf\xe9\"", "messages[0].content"},
		"lone high surrogate": {`"x\ud83dy"`, "messages[0].content"},
		"lone low surrogate":  {`[{"type":"text","text":"\ude00"}]`, "messages[0].content[0].text"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%s}]}`, testModel, c.content)
			resp := s.post(t, body)
			is.Equal(resp.StatusCode, 400)
			var e errorBody
			is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
			is.Equal(e.Error.Code, "invalid_request")
			is.True(e.Error.Param != nil && *e.Error.Param == c.param) // the field path
		})
	}
	is.New(t).Equal(len(s.emu.Requests()), 0) // nothing reached the upstream
	resp := s.post(t, userBody("a real pair: \U0001F600", false, ""))
	is.New(t).Equal(resp.StatusCode, 200) // a proper pair and valid UTF-8 pass
}

// TestAFullCorrelationStoreSpendsNoUpstreamQuery: with the store full, a new
// request with tools is 503 correlation_capacity_exceeded before it is sent.
func TestAFullCorrelationStoreSpendsNoUpstreamQuery(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, map[string]string{"CORRELATION_MAX_GROUPS": "1"})
			pending(t, s, "fill the store")
			before := s.emu.Count(emulator.KindUserQuery)
			for _, stream := range []string{"", `,"stream":true`} {
				for range 5 {
					resp := s.post(t, chatBody(t, testModel, []msg{{"role": "user", "content": "more"}}, toolsJSON, stream))
					is.Equal(resp.StatusCode, 503)
					is.True(resp.Header.Get("retry-after") != "") // a retry hint
					var e errorBody
					is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
					is.Equal(e.Error.Code, "correlation_capacity_exceeded")
				}
			}
			is.Equal(s.emu.Count(emulator.KindUserQuery), before) // not one upstream query spent
			resp := s.post(t, userBody("no tools", false, ""))
			is.Equal(resp.StatusCode, 200) // requests without tools still pass
		})
	}
}

func TestTheHardeningSettingsAreValidated(t *testing.T) {
	base := map[string]string{"PROVIDER_API_KEY": testKey, "PROVIDER_MODELS": testModel, "POSTMAN_TRANSPORT_STRATEGY": "web_session",
		"POSTMAN_SESSION_COOKIE": testCookie, "POSTMAN_WORKSPACE_SUBDOMAIN": testSubdomain,
		"POSTMAN_WORKSPACE_ID": testWorkspace, "POSTMAN_MODEL_MAP": testModel + "=GPT_55"}
	load := func(extra map[string]string) (config, error) {
		return loadConfig(func(k string) string {
			if v, ok := extra[k]; ok {
				return v
			}
			return base[k]
		})
	}
	is := is.New(t)
	c, err := load(nil)
	is.NoErr(err)
	is.Equal(c.maxConnections, 256)                 // defaults
	is.Equal(c.bodyTimeout, 30*time.Second)         // BODY_READ_TIMEOUT_MS 30000
	is.Equal(c.allowedHosts, []string{"127.0.0.1"}) // PROVIDER_HOST (loopback names are always served)
	c, err = load(map[string]string{"ALLOWED_HOSTS": "gw.internal,[fd00::1]", "MAX_CONNECTIONS": "1000", "BODY_READ_TIMEOUT_MS": "5000", "PROVIDER_HOST": "0.0.0.0"})
	is.NoErr(err)
	is.Equal(c.allowedHosts, []string{"0.0.0.0", "gw.internal", "fd00::1"})
	is.Equal(c.maxConnections, 1000)
	is.Equal(c.bodyTimeout, 5*time.Second)
	for k, v := range map[string]string{"ALLOWED_HOSTS": "*.example.com", "MAX_CONNECTIONS": "0", "BODY_READ_TIMEOUT_MS": "soon"} {
		_, err := load(map[string]string{k: v})
		is.True(errs.Has(err, errs.ConfigInvalid))  // refused
		is.True(strings.Contains(describe(err), k)) // naming the variable
	}
}

// TestIdleConnectionsAreCappedAtMaxConnections: 200 idle keep-alive clients
// against MAX_CONNECTIONS=40 leave at most 40 connections open on the gateway;
// every client was served.
func TestIdleConnectionsAreCappedAtMaxConnections(t *testing.T) {
	is := is.New(t)
	s := serve(t, "access_token", map[string]string{"MAX_CONNECTIONS": "40"})
	addr := strings.TrimPrefix(s.base, "http://")
	var conns []net.Conn
	var readers []*bufio.Reader
	for range 200 {
		c, err := net.Dial("tcp", addr)
		is.NoErr(err)
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		fmt.Fprint(c, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		is.NoErr(err) // every client is served
		_, _ = io.Copy(io.Discard, resp.Body)
		is.Equal(resp.StatusCode, 200)
		conns, readers = append(conns, c), append(readers, br)
	}
	open := 0
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := readers[i].ReadByte(); err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			open++ // still open: the read only timed out
		}
	}
	is.True(open <= 40) // the gateway closed the longest-idle ones to stay at its cap
	is.True(open >= 30) // and kept the recent ones
}
