package postman_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/errs"
)

// failureLog returns the attributes of the "upstream request failed" record.
func failureLog(t *testing.T, logs *bytes.Buffer) map[string]any {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "upstream request failed" {
			return m
		}
	}
	t.Fatalf("no failure record in %s", logs.String())
	return nil
}

func jsonLogger(buf *bytes.Buffer) postman.Option {
	return postman.WithLogger(slog.New(slog.NewJSONHandler(buf, nil)))
}

func TestTransportFailuresLogTheirCause(t *testing.T) {
	t.Parallel()
	f := newFakeTLS(t, sseHandler(okStream))
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	refusedAddr := closed.Addr().String()
	_ = closed.Close()
	silent, _ := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers the handshake
	t.Cleanup(func() { _ = silent.Close() })
	cases := []struct {
		name  string
		opts  []postman.Option
		cause string
		env   func(string) string
	}{
		{"untrusted certificate", []postman.Option{postman.WithDialContext(dialTo(f.addr()))}, "tls_unknown_authority", env(webEnv())},
		{"certificate for another host", []postman.Option{postman.WithRootCAs(f.pool)}, "tls_hostname_mismatch",
			env(tokenEnv("https://localhost:" + strings.Split(f.addr(), ":")[1]))},
		{"connection refused", []postman.Option{postman.WithDialContext(dialTo(refusedAddr))}, "connection_refused", env(webEnv())},
		{"dns", []postman.Option{postman.WithDialContext(func(context.Context, string, string) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: webHost, IsNotFound: true}}
		})}, "dns_not_found", env(webEnv())},
		{"timeout", []postman.Option{postman.WithDialContext(dialTo(silent.Addr().String()))}, "timeout",
			env(webEnv(), "REQUEST_TIMEOUT_MS", "1000")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			var logs bytes.Buffer
			cl := mustNew(t, mustParse(t, c.env), append(c.opts, jsonLogger(&logs))...)
			_, _, err := open(t, cl, userText("hi"))
			is.True(err != nil)
			m := failureLog(t, &logs)
			is.Equal(m["cause"], c.cause) // the redacted cause, by name
			is.True(!strings.Contains(logs.String(), cookie) && !strings.Contains(logs.String(), token))
		})
	}
}

func TestAnUpstreamErrorTypeIsLoggedAndNamesTheSettingToCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body, typ, hint string
	}{
		{`{"error":{"message":"INPUT_VALIDATION_ERROR"}}`, "INPUT_VALIDATION_ERROR", "POSTMAN_MODEL_MAP"},
		{`{"error":{"name":"INVALID_MODEL","message":"model GPT_99 secret-ish text"}}`, "INVALID_MODEL", "check POSTMAN_MODEL_MAP"},
		{`{"errorType":"WORKSPACE_NOT_FOUND","message":"no team 42"}`, "WORKSPACE_NOT_FOUND", "check POSTMAN_WORKSPACE_ID"},
		{`{"message":"Something went wrong"}`, "", ""},
		{`not json at all`, "", ""},
	}
	for _, c := range cases {
		is := is.New(t)
		f := newFakeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(c.body))
		}))
		var logs bytes.Buffer
		cl := f.client(t, "web_session", jsonLogger(&logs))
		_, _, err := open(t, cl, userText("hi"))
		is.True(errs.Has(err, errs.UpstreamRequestRejected))
		m := failureLog(t, &logs)
		if c.typ == "" {
			is.Equal(m["upstream_error_type"], nil)
		} else {
			is.Equal(m["upstream_error_type"], c.typ) // the type, never the message
		}
		is.True(!strings.Contains(logs.String(), "secret-ish") && !strings.Contains(logs.String(), "no team 42"))
		var h interface{ SettingHint() string }
		hinted := errors.As(err, &h)
		if c.hint == "" {
			is.True(!hinted || h.SettingHint() == "")
		} else {
			is.True(hinted && strings.Contains(h.SettingHint(), c.hint)) // the client error names the setting
		}
	}
}

func TestAFailureEventLogsItsErrorTypeOnly(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	f := newFakeTLS(t, sseHandler("data: {\"eventType\":\"failure\",\"data\":{\"errorType\":\"MODEL_NOT_AVAILABLE\","+
		"\"message\":\"secret-ish upstream text\"}}\n\n"))
	var logs bytes.Buffer
	cl := f.client(t, "web_session", jsonLogger(&logs))
	_, d, err := open(t, cl, userText("hi"))
	is.NoErr(err)
	is.True(errs.Has(d.err, errs.UpstreamFailure))
	var h interface{ SettingHint() string }
	is.True(errors.As(d.err, &h) && strings.Contains(h.SettingHint(), "POSTMAN_MODEL_MAP")) // the client error names the setting
	is.True(strings.Contains(logs.String(), `"upstream_error_type":"MODEL_NOT_AVAILABLE"`)) // the log names the type
	is.True(!strings.Contains(logs.String(), "secret-ish"))                                 // never the message
	is.Equal(postman.ErrorType(d.err), "MODEL_NOT_AVAILABLE")                               // and so does the error, for the probe's report
	is.Equal(postman.ErrorType(errs.New(errs.UpstreamFailure)), "")                         // nothing named, nothing kept
}
