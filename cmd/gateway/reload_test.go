package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/secret"
)

// withoutLines drops the lines that set one of names.
func withoutLines(lines []string, names ...string) []string {
	return slices.DeleteFunc(slices.Clone(lines), func(l string) bool {
		k, _, _ := strings.Cut(l, "=")
		return slices.Contains(names, k)
	})
}

// reloadedLine is the last "configuration reloaded" line of the logs ("" when
// none).
func reloadedLine(s *served) string {
	var last string
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(l, `"msg":"configuration reloaded"`) {
			last = l
		}
	}
	return last
}

// TestSwappingTheKeyFileForAnAPIKeyWaitsForARestart: a serve started with
// PROVIDER_KEYS_FILE whose env file now names PROVIDER_API_KEY instead keeps
// the key file's slots (the new single key is refused) and says both need a
// restart; it must not replace the slots live.
func TestSwappingTheKeyFileForAnAPIKeyWaitsForARestart(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	keys := filepath.Join(t.TempDir(), "keys.json")
	slotKey := newSlotKey(t, keys, "--id", "first")
	base := withoutLines(accessTokenEnv(emu, testToken), "PROVIDER_API_KEY")
	file := writeEnvFile(t, "", append(base, "PROVIDER_KEYS_FILE="+keys)...)
	s := serveEnvFile(t, emu, file, true)
	status, _ := chatStatus(t, s, slotKey)
	is.Equal(status, 200)

	single := "sk-single-key-instead-0123456789"
	writeEnvFile(t, file, append(base, "PROVIDER_API_KEY="+single)...)
	waitLog(t, s, `"msg":"configuration reloaded"`)
	line := reloadedLine(s)
	is.True(strings.Contains(line, `"applied":""`)) // nothing applied live
	is.True(strings.Contains(line, "PROVIDER_API_KEY") && strings.Contains(line, "PROVIDER_KEYS_FILE"))
	is.True(strings.Contains(line, `"restart_needed":"`)) // both named as needing a restart
	status, _ = chatStatus(t, s, slotKey)
	is.Equal(status, 200) // the key file's slot still holds
	status, _ = chatStatus(t, s, single)
	is.Equal(status, 401) // the single key waits for the restart
	is.True(!strings.Contains(s.logs.String(), single))
}

// TestASecretIntroducedByAReloadIsRedactedFromThenOn: a credential and an API
// key that only a reload brought are masked in every later log line.
func TestASecretIntroducedByAReloadIsRedactedFromThenOn(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	file := writeEnvFile(t, "", accessTokenEnv(emu, testToken)...)
	s := serveEnvFile(t, emu, file, true)
	token, key := "reloaded-access-token-0123456789abcdef", "sk-reloaded-api-key-0123456789"
	writeEnvFile(t, file, append(accessTokenEnv(emu, token), "PROVIDER_API_KEY="+key)...)
	waitLog(t, s, `"applied":"PROVIDER_API_KEY,POSTMAN_ACCESS_TOKEN"`)
	g := s.logs.gw.Load()
	is.True(g != nil)
	g.log.Info("a line quoting the reloaded secrets", "token", "Bearer "+token, "key", key)
	waitLog(t, s, "a line quoting the reloaded secrets")
	is.True(!strings.Contains(s.logs.String(), token)) // the new credential is masked
	is.True(!strings.Contains(s.logs.String(), key))   // and the new API key
	is.True(strings.Contains(s.logs.String(), secret.Redacted))
}

// TestAChangedStrategyIsNotAppliedLive: a new POSTMAN_TRANSPORT_STRATEGY (and
// the other strategy's credentials) waits for a restart, said so; requests
// keep the strategy and credential in force.
func TestAChangedStrategyIsNotAppliedLive(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	file := writeEnvFile(t, "", accessTokenEnv(emu, testToken)...)
	s := serveEnvFile(t, emu, file, true)
	web := append(withoutLines(accessTokenEnv(emu, ""), "POSTMAN_TRANSPORT_STRATEGY", "POSTMAN_ACCESS_TOKEN", "POSTMAN_ORIGIN"),
		"POSTMAN_TRANSPORT_STRATEGY=web_session", "POSTMAN_SESSION_COOKIE="+testCookie, "POSTMAN_WORKSPACE_SUBDOMAIN="+testSubdomain)
	writeEnvFile(t, file, web...)
	waitLog(t, s, `"msg":"configuration reloaded"`)
	line := reloadedLine(s)
	is.True(strings.Contains(line, `"applied":""`)) // nothing of the other strategy applied
	for _, name := range []string{"POSTMAN_TRANSPORT_STRATEGY", "POSTMAN_SESSION_COOKIE", "POSTMAN_ACCESS_TOKEN"} {
		is.True(strings.Contains(line, name)) // named as needing a restart
	}
	status, _ := chatStatus(t, s, testKey)
	is.Equal(status, 200) // still the access token, to the same origin
}

// TestAChangedWorkspaceIsNotAppliedLive: a reload that rebuilds the upstream
// adapter (a new user agent) keeps the workspace in force and names
// POSTMAN_WORKSPACE_ID as needing a restart (the emulator refuses any other
// workspace).
func TestAChangedWorkspaceIsNotAppliedLive(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	file := writeEnvFile(t, "", accessTokenEnv(emu, testToken)...)
	s := serveEnvFile(t, emu, file, true)
	next := append(withoutLines(accessTokenEnv(emu, testToken), "POSTMAN_WORKSPACE_ID"),
		"POSTMAN_WORKSPACE_ID=another-workspace", "POSTMAN_USER_AGENT=pmgate-reload-test/1")
	writeEnvFile(t, file, next...)
	waitLog(t, s, `"applied":"POSTMAN_USER_AGENT","restart_needed":"POSTMAN_WORKSPACE_ID"`)
	status, code := chatStatus(t, s, testKey)
	is.Equal(code, "")
	is.Equal(status, 200) // the workspace in force is the one the process started with
}

// TestAReloadReadsAChangedProbeReportPath: /health's verification follows a
// PROBE_REPORT that a reload pointed elsewhere.
func TestAReloadReadsAChangedProbeReportPath(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	missing := filepath.Join(t.TempDir(), "absent.json")
	file := writeEnvFile(t, "", append(accessTokenEnv(emu, testToken), "PROBE_REPORT="+missing)...)
	s := serveEnvFile(t, emu, file, true)
	is.Equal(getJSON(t, s.base+"/health")["upstream_verified_reason"], "PROBE_REPORT could not be read")

	good, err := filepath.Abs("testdata/probe/good.json")
	is.NoErr(err)
	writeEnvFile(t, file, append(accessTokenEnv(emu, testToken), "PROBE_REPORT="+good)...)
	waitLog(t, s, `"applied":"PROBE_REPORT"`)
	h := getJSON(t, s.base+"/health")
	is.Equal(h["upstream_verified"], false) // the seed is another configuration's
	is.True(h["upstream_verified_reason"] != "PROBE_REPORT could not be read")
	raw, err := os.ReadFile(good)
	is.NoErr(err)
	is.Equal(h["upstream_report_digest"], reportDigest(raw)) // the new path's report was read
}
