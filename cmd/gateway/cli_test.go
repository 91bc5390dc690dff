package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestCheckConfigRefusesTheExampleFileListingEveryPlaceholder(t *testing.T) {
	is := is.New(t)
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"check-config", "--env-file", "../../examples/gateway.env.example"}, noEnv, &out, &errOut)
	is.Equal(exitCode(err), 78)
	for _, v := range []string{"PROVIDER_API_KEY", "POSTMAN_SESSION_COOKIE", "POSTMAN_WORKSPACE_SUBDOMAIN", "POSTMAN_WORKSPACE_ID"} {
		is.True(strings.Contains(errOut.String(), "  - "+v+": still holds the example file's placeholder")) // each one, in one run
	}
	is.True(strings.Contains(errOut.String(), "4 problem(s)"))
	is.True(!strings.Contains(out.String(), "configuration ok"))
}

func TestCheckConfigReportsEveryProblemAtOnce(t *testing.T) {
	is := is.New(t)
	env := map[string]string{"PROVIDER_API_KEY": "short", "POSTMAN_TRANSPORT_STRATEGY": "web_session", "PROVIDER_PORT": "x",
		"MAX_TOOLS": "999", "LOG_LEVEL": "loud", "POSTMAN_WORKSPACE_SUBDOMAIN": "www"}
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"check-config"}, func(k string) string { return env[k] }, &out, &errOut)
	is.Equal(exitCode(err), 78)
	for _, v := range []string{"PROVIDER_PORT", "PROVIDER_API_KEY", "POSTMAN_SESSION_COOKIE", "POSTMAN_WORKSPACE_SUBDOMAIN",
		"POSTMAN_WORKSPACE_ID", "PROVIDER_MODELS", "MAX_TOOLS", "LOG_LEVEL"} {
		is.True(strings.Contains(errOut.String(), "  - "+v+": ")) // every variable named
	}
	is.True(strings.Contains(errOut.String(), "8 problem(s)"))
}

func TestCheckConfigWarnsWhenTheListenerIsNotLoopback(t *testing.T) {
	is := is.New(t)
	for host, warned := range map[string]bool{"0.0.0.0": true, "192.168.1.5": true, "127.0.0.1": false, "::1": false, "localhost": false} {
		var out bytes.Buffer
		err := run(t.Context(), []string{"check-config", "--env-file", "testdata/probe/web_session.env"},
			func(k string) string { return map[string]string{"PROVIDER_HOST": host}[k] }, &out, &out)
		is.NoErr(err) // a warning, not a refusal
		is.Equal(strings.Contains(out.String(), "warning: PROVIDER_HOST is not a loopback address"), warned)
	}
}

func TestEverySubcommandHasHelpListingItsFlagsAndVariables(t *testing.T) {
	is := is.New(t)
	cases := map[string][]string{
		"serve":        {"--env-file", "PROVIDER_API_KEY", "POSTMAN_SESSION_COOKIE", "PROBE_REPORT"},
		"check-config": {"--env-file", "POSTMAN_MODEL_MAP"},
		"demo":         {"--strategy", "--port", "--profile", "--key", "DEMO_API_KEY"},
		"emulator":     {"--addr", "--subdomain", "--workspace", "--profile", "EMULATOR_SESSION_COOKIE"},
		"diagram":      {"--dir", "--check"},
		"probe":        {"--live", "--emulator", "--env-file", "--out", "--measure-limits", "POSTMAN_MAX_QUERY_CHARS"},
		"verify":       {"--max-age", "--env-file", "--require-observed-model", "--now"},
		"version":      {"--version"},
		"ready":        {"--url", "PROVIDER_PORT", "/readyz"},
		"recipe":       {"claude-code", "codex", "opencode", "--dir", "--base-url", "--model", "--force", "PROVIDER_MODELS"},
	}
	for cmd, want := range cases {
		for _, flag := range []string{"--help", "-h"} {
			var out bytes.Buffer
			is.NoErr(run(t.Context(), []string{cmd, flag}, noEnv, &out, &out)) // help is not an error
			is.True(strings.HasPrefix(out.String(), "usage: gateway "+cmd))
			for _, w := range want {
				is.True(strings.Contains(out.String(), w)) // lists the flag or variable
			}
			is.True(!strings.Contains(out.String(), "flag: help requested"))
		}
	}
}

func TestVersionFlagAndNearestCommandSuggestion(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	is.NoErr(run(t.Context(), []string{"--version"}, noEnv, &out, &out))
	is.True(strings.HasPrefix(out.String(), "gateway "))
	for typo, want := range map[string]string{"sevre": "serve", "check-conifg": "check-config", "verfy": "verify", "prob": "probe"} {
		err := run(t.Context(), []string{typo}, noEnv, &out, &out)
		is.True(errors.Is(err, errUsage))
		is.True(strings.Contains(err.Error(), `did you mean "`+want+`"?`))
	}
	err := run(t.Context(), []string{"frobnicate"}, noEnv, &out, &out)
	is.True(!strings.Contains(err.Error(), "did you mean")) // nothing close
	err = run(t.Context(), []string{"serve", "--bogus"}, noEnv, &out, &out)
	is.True(errors.Is(err, errUsage))
	is.True(strings.Contains(err.Error(), "see --help"))
}

func TestAWrongModelEnumIsDiagnosableFromTheErrorAndTheLog(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, map[string]string{"POSTMAN_MODEL_MAP": testModel + "=GPT_99"})
			resp := s.post(t, userBody("hi", false, ""))
			is.Equal(resp.StatusCode, 422)
			var e errorBody
			is.NoErr(json.NewDecoder(resp.Body).Decode(&e))
			is.Equal(e.Error.Code, "upstream_request_rejected")
			is.True(strings.Contains(e.Error.Message, "check POSTMAN_MODEL_MAP")) // the client error names the setting
			logs := s.logs.String()
			is.True(strings.Contains(logs, `"upstream_error_type":"INPUT_VALIDATION_ERROR"`)) // the log names the upstream's type
			is.True(strings.Contains(logs, `"status":400`))
		})
	}
}

func TestAnUntrustedUpstreamCertificateIsDiagnosableFromTheLog(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	// No test CA: the gateway trusts only the system roots, which do not
	// include the emulator's.
	var logs syncBuffer
	cfg, err := loadConfig(func(k string) string {
		return map[string]string{"PROVIDER_PORT": "0", "PROVIDER_API_KEY": testKey, "PROVIDER_MODELS": testModel,
			"POSTMAN_TRANSPORT_STRATEGY": "access_token", "POSTMAN_ACCESS_TOKEN": testToken, "POSTMAN_ORIGIN": emu.Origin(),
			"POSTMAN_WORKSPACE_ID": testWorkspace, "POSTMAN_MODEL_MAP": testModel + "=GPT_55"}[k]
	})
	is.NoErr(err)
	gw, err := startGateway(t.Context(), cfg, newLogger(cfg, &logs))
	is.NoErr(err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- gw.wait(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	req, _ := http.NewRequest(http.MethodPost, "http://"+gw.addr()+"/v1/chat/completions", strings.NewReader(userBody("hi", false, "")))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	is.NoErr(err)
	var e errorBody
	_ = json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	is.Equal(resp.StatusCode, 502)
	is.True(strings.Contains(logs.String(), `"cause":"tls_unknown_authority"`)) // not just status=0
	is.True(strings.Contains(logs.String(), `"code":"upstream_unavailable"`))
}

func TestDebugLogsTheRequestLifecycleWithSafeFieldsOnly(t *testing.T) {
	is := is.New(t)
	s := serve(t, "web_session", map[string]string{"LOG_LEVEL": "debug"})
	_, cont, _ := pending(t, s, "weather please, secret-user-text")
	status, _, _ := turnResult(t, s, chatBody(t, testModel, cont, toolsJSON, ""))
	is.Equal(status, 200)
	// The rows the machines applied are logged by a subscriber of the
	// gateway's events, off the request's goroutine; reading the log hands
	// it what was observed so far.
	logs := s.logs.String()
	row := false
	for _, e := range logEntries(logs) {
		if e.Msg == "correlation" && e.Row == "C14" {
			is.True(e.RequestID != "") // logged with the request's context
			row = true
		}
	}
	is.True(row) // the continuation's correlation row is in the log
	for _, step := range []string{`"msg":"request decoded"`, `"msg":"dispatch","chat_type":"USER_QUERY"`,
		`"msg":"upstream request sent"`, `"msg":"upstream first event"`, `"msg":"completion"`, `"msg":"tool group admitted"`, `"msg":"dispatch","chat_type":"TOOL_RESPONSE"`,
		`"msg":"correlation"`} {
		is.True(strings.Contains(logs, step)) // each lifecycle step is logged
	}
	for _, bad := range []string{"secret-user-text", "sunny for", "call_pmn_", "conv-", "grp-", testWorkspace} {
		is.True(!strings.Contains(logs, bad)) // never content, ids or the workspace
	}
}

func TestServeRefusesAConfigurationListingEveryProblem(t *testing.T) {
	is := is.New(t)
	err := run(t.Context(), []string{"serve", "--env-file", "../../examples/gateway.env.example"}, noEnv, io.Discard, io.Discard)
	is.Equal(exitCode(err), 78)
	d := describe(err)
	is.True(strings.HasPrefix(d, "config_invalid: 4 problems:\n  - PROVIDER_API_KEY: still holds"))
	is.True(strings.Contains(d, "\n  - POSTMAN_WORKSPACE_ID: still holds"))
}
