package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman"
)

// connectRecipe returns the commands of docs/CONNECT.md's code block that
// holds want, split on "&&".
func connectRecipe(t *testing.T, want string) [][]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/CONNECT.md")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(doc), "```")
	for i := 1; i < len(parts); i += 2 { // the insides of the fences
		block := parts[i]
		if !strings.Contains(block, want) {
			continue
		}
		_, body, _ := strings.Cut(block, "\n") // the info string
		var cmds [][]string
		for _, part := range strings.Split(strings.TrimSpace(body), "&&") {
			cmds = append(cmds, strings.Fields(part))
		}
		return cmds
	}
	t.Fatalf("docs/CONNECT.md has no code block with %q", want)
	return nil
}

// runRecipe runs a recipe's commands as a shell would, in the current
// directory: `go run ./cmd/gateway …` through program.run, `mv A B`, and a
// reload (`systemctl reload pmgate`, `kill -HUP …`) as SIGHUP. A command it
// does not know fails the test, so the page cannot grow an untested step.
// It stops at the first failing command, as && does, and returns its error.
func runRecipe(t *testing.T, cmds [][]string, p program) error {
	t.Helper()
	for _, c := range cmds {
		switch {
		case len(c) > 3 && slices.Equal(c[:3], []string{"go", "run", "./cmd/gateway"}):
			if err := p.run(t.Context(), c[3:]); err != nil {
				return err
			}
		case len(c) == 3 && c[0] == "mv":
			if err := os.Rename(c[1], c[2]); err != nil {
				return err
			}
		case slices.Equal(c, []string{"systemctl", "reload", "pmgate"}) || len(c) > 1 && c[0] == "kill" && c[1] == "-HUP":
			if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
				return err
			}
		default:
			t.Fatalf("the recipe has a step this test cannot run: %q", c)
		}
	}
	return nil
}

// TestTheDailyReprobeRecipeOfCONNECTKeepsTheGatewayVerified runs
// docs/CONNECT.md as written: step 4's probe, then serve with
// PROBE_REPORT=probe.json, then the daily re-probe and reload. /health stays
// verified by the new report; a failing re-probe leaves the last passing
// report and its MAC in force.
func TestTheDailyReprobeRecipeOfCONNECTKeepsTheGatewayVerified(t *testing.T) {
	is := is.New(t)
	emu := newEmulator(t)
	env, upstream := emulatorEnv(emu, "web_session", nil)
	step4 := connectRecipe(t, "probe --live --env-file my.env --out probe.json\n")
	daily := connectRecipe(t, "systemctl reload pmgate")
	dir := t.TempDir()
	t.Chdir(dir)
	var lines []string
	for k, v := range env {
		lines = append(lines, k+"="+v)
	}
	writeEnvFile(t, "my.env", lines...)
	var out bytes.Buffer
	p := program{getenv: noEnv, stdout: &out, stderr: io.Discard, upstream: upstream}

	is.NoErr(runRecipe(t, step4, p)) // step 4
	s := serveWith(t, emu, "web_session", map[string]string{"PROBE_REPORT": dir + "/probe.json"})
	first := health(t, s)
	is.Equal(first["upstream_verified"], true) // step 5

	time.Sleep(1100 * time.Millisecond) // a report of another second: another digest
	is.NoErr(runRecipe(t, daily, p))
	waitLog(t, s, `"msg":"configuration reloaded","reason":"sighup"`)
	second := health(t, s)
	is.Equal(second["upstream_verified"], true)                                  // still verified after the recipe
	is.True(second["upstream_report_digest"] != first["upstream_report_digest"]) // by the new report
	is.True(second["upstream_verified_at"] != first["upstream_verified_at"])     // written now

	kept, err := os.ReadFile("probe.json")
	is.NoErr(err)
	broken := program{getenv: noEnv, stdout: &out, stderr: io.Discard, upstream: []postman.Option{
		postman.WithDialContext(func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: addr, IsNotFound: true}}
		})}}
	out.Reset()
	is.True(runRecipe(t, daily, broken) != nil) // the failing probe stops the recipe before the reload
	now, err := os.ReadFile("probe.json")
	is.NoErr(err)
	is.True(bytes.Equal(now, kept))                                            // the passing report stays
	is.True(strings.Contains(out.String(), "kept    probe.json and its .mac")) // and the probe says so
	_, err = os.Stat("probe.failed.json")
	is.NoErr(err)                                                                                           // the failing one is beside it, for the diagnosis
	is.True(reportAuthentic(config{probeReport: "probe.json", upstream: mustConfig(t, env).upstream}, now)) // its MAC still matches
}

// health is /health's JSON.
func health(t *testing.T, s *served) map[string]any {
	t.Helper()
	resp := s.do(t, "GET", "/health", nil)
	var h map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

func mustConfig(t *testing.T, env map[string]string) config {
	t.Helper()
	cfg, err := loadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
