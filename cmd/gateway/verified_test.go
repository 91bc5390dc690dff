package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func seededConfig(t *testing.T, extra map[string]string) config {
	t.Helper()
	cfg, err := configFromArgs("serve", []string{"--env-file", "testdata/probe/web_session.env"},
		func(k string) string { return extra[k] })
	is.New(t).NoErr(err)
	return cfg
}

func TestHealthIsVerifiedOnlyByAReportThatPassesForTheRunningConfiguration(t *testing.T) {
	is := is.New(t)
	written := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) func() time.Time { return func() time.Time { return written.Add(d) } }

	live := filepath.Join(t.TempDir(), "live.json")
	liveRaw := editReport(t, func(d map[string]any) { d["mode"] = "live" })
	is.NoErr(os.WriteFile(live, liveRaw, 0o600))
	is.NoErr(os.WriteFile(macPath(live), []byte(reportMAC(seededConfig(t, nil).upstream, liveRaw)), 0o600))
	ok, fields := probeVerification(seededConfig(t, map[string]string{"PROBE_REPORT": live}), at(time.Hour))()
	is.True(ok)                                                         // passes verify for this configuration
	is.Equal(fields["upstream_verified_at"], "2026-12-01T09:00:00Z")    // with its time
	is.Equal(fields["upstream_verified_until"], "2026-12-02T09:00:00Z") // and when it ages out
	is.True(strings.HasPrefix(fields["upstream_report_digest"].(string), "sha256:"))

	ok, fields = probeVerification(seededConfig(t, map[string]string{"PROBE_REPORT": live}), at(25*time.Hour))()
	is.True(!ok) // the same report, a day later
	is.True(strings.HasPrefix(fields["upstream_verified_reason"].(string), "freshness: "))

	other := seededConfig(t, map[string]string{"PROBE_REPORT": live, "POSTMAN_WORKSPACE_ID": "another-team"})
	ok, fields = probeVerification(other, at(time.Hour))()
	is.True(!ok) // another account's evidence does not count
	is.True(strings.HasPrefix(fields["upstream_verified_reason"].(string), "configuration: "))

	ok, fields = probeVerification(seededConfig(t, map[string]string{"PROBE_REPORT": "testdata/probe/bad/cleanup--not-proven.json"}), at(time.Hour))()
	is.True(!ok) // a failing report
	is.True(strings.HasPrefix(fields["upstream_verified_reason"].(string), "cleanup: "))

	ok, fields = probeVerification(seededConfig(t, nil), at(time.Hour))()
	is.True(!ok)
	is.Equal(fields["upstream_verified_reason"], "no PROBE_REPORT is configured")

	ok, fields = probeVerification(seededConfig(t, map[string]string{"PROBE_REPORT": "testdata/probe/absent.json"}), at(time.Hour))()
	is.True(!ok)
	is.Equal(fields["upstream_verified_reason"], "PROBE_REPORT could not be read")
}

func TestServeShowsTheReasonOnHealth(t *testing.T) {
	is := is.New(t)
	s := serve(t, "web_session", map[string]string{"PROBE_REPORT": "testdata/probe/good.json"})
	resp, err := http.Get(s.base + "/health")
	is.NoErr(err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var h map[string]any
	is.NoErr(json.Unmarshal(raw, &h))
	is.Equal(h["upstream_verified"], false) // the seed is another configuration's (and old)
	is.True(h["upstream_verified_reason"] != nil)
}
