package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

// TestAMeasuredParallelGroupIsWhatServeSends (issue 36 item 4): probe
// --measure-parallel against the web_session emulator, which accepts the
// array form with its group id (ps2Api's traces, 529 doc §3.2), then serve
// with the verified report and no POSTMAN_PARALLEL_TOOL_CALLS: the client's
// parallel_tool_calls decides isParallelToolCallingSupported, /health says it
// was measured; a setting wins; a report without the phase changes nothing.
func TestAMeasuredParallelGroupIsWhatServeSends(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	env, opts := emulatorEnv(emu, "web_session", nil)
	cfg, err := loadConfig(func(k string) string { return env[k] })
	is.NoErr(err)
	report := func(measure bool) string {
		var logs syncBuffer
		res, err := runProbePhases(t.Context(), cfg, probeRun{mode: "live", measureParallel: measure, maxQuery: cfg.upstream.MaxQueryChars,
			maxTools: cfg.upstream.MaxToolsUpstream, log: newLogger(cfg, &logs), opts: opts})
		is.NoErr(err)
		is.Equal(res.report.Failures, []string{}) // verify accepts the evidence
		path := filepath.Join(t.TempDir(), "probe.json")
		is.NoErr(os.WriteFile(path, res.raw, 0o600))
		is.NoErr(os.WriteFile(macPath(path), []byte(reportMAC(cfg.upstream, res.raw)), 0o600))
		return path
	}
	measured := report(true)
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "list_files", "description": "List",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{}}}}}
	// flag sends a tool turn and returns the isParallelToolCallingSupported
	// the upstream request carried.
	flag := func(base string, parallel bool) any {
		emu.Reset()
		status, _ := postChat(t, base, map[string]any{"model": testModel, "tools": tools, "parallel_tool_calls": parallel,
			"messages": []any{map[string]any{"role": "user", "content": "hi #loop=0"}}})
		is.Equal(status, http.StatusOK) // answered
		reqs := emu.Requests()
		is.Equal(len(reqs), 1)
		var sent struct {
			DevModeOptions map[string]any `json:"devModeOptions"`
		}
		is.NoErr(json.Unmarshal(reqs[0].Body, &sent))
		return sent.DevModeOptions["isParallelToolCallingSupported"]
	}
	health := func(base string) any {
		return getJSON(t, base+"/health")["upstream_limits"].(map[string]any)["parallel_tool_calls"]
	}

	s := serveWith(t, emu, "web_session", map[string]string{"PROBE_REPORT": measured})
	is.Equal(health(s.base), map[string]any{"value": "client", "from": "measured"})
	is.Equal(flag(s.base, true), true)   // the client asked for parallel calls: sent
	is.Equal(flag(s.base, false), false) // and not when it did not

	set := serveWith(t, emu, "web_session", map[string]string{"PROBE_REPORT": measured, "POSTMAN_PARALLEL_TOOL_CALLS": "false"})
	is.Equal(health(set.base), map[string]any{"value": "off", "from": "setting"})
	is.Equal(flag(set.base, true), false) // the setting wins over the measurement

	// A reload that rebuilds the adapter (a new cookie value, the same
	// cookie here, and a new user agent) keeps the measured decision.
	lines := []string{}
	for k, v := range env {
		lines = append(lines, k+"="+v)
	}
	file := writeEnvFile(t, "", append(lines, "PROBE_REPORT="+measured)...)
	r := serveEnvFile(t, emu, file, true)
	is.Equal(flag(r.base, true), true)
	writeEnvFile(t, file, append(lines, "PROBE_REPORT="+measured, "POSTMAN_USER_AGENT=pmgate-reload-test/1")...)
	waitLog(t, r, `"applied":"POSTMAN_USER_AGENT`)
	is.Equal(health(r.base), map[string]any{"value": "client", "from": "measured"})
	is.Equal(flag(r.base, true), true) // still the client's choice after the reload

	plain := serveWith(t, emu, "web_session", map[string]string{"PROBE_REPORT": report(false)})
	is.Equal(health(plain.base), map[string]any{"value": "off", "from": "default"})
	is.Equal(flag(plain.base, true), false) // no measurement: serial on web_session, as before
}
