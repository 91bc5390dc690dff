package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/budget"
)

// seedWritten is when the good seed report was written.
var seedWritten = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// measuredReport writes a live report of the good seed carrying the recorded
// limits phase with every character count times scale (the query-length
// search of a service that accepts scale times more), with its MAC beside it
// when mac is set, and returns its path.
func measuredReport(t *testing.T, scale int, mode string, mac bool) string {
	t.Helper()
	raw := editReport(t, func(d map[string]any) {
		d["mode"] = mode
		l := limitsPhase()
		for _, k := range []string{"start_chars", "ceiling_chars", "longest_accepted_chars", "shortest_rejected_chars", "measured_chars"} {
			l[k] = l[k].(float64) * float64(scale)
		}
		for _, q := range l["phase"].(map[string]any)["requests"].([]any) {
			q := q.(map[string]any)
			if q["kind"] == "limit_fresh" {
				q["query_chars"] = q["query_chars"].(float64) * float64(scale)
			}
		}
		d["limits"] = l
		d["policy"].(map[string]any)["max_query_chars"] = l["start_chars"]
	})
	path := filepath.Join(t.TempDir(), "probe.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if mac {
		if err := os.WriteFile(macPath(path), []byte(reportMAC(seededConfig(t, nil).upstream, raw)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestAMeasuredQueryLimitIsClampedToItsBound: a verified report that measured
// 1,350,000 characters gives the bound of POSTMAN_MAX_QUERY_CHARS, 1,000,000.
func TestAMeasuredQueryLimitIsClampedToItsBound(t *testing.T) {
	is := is.New(t)
	cfg := seededConfig(t, map[string]string{"PROBE_REPORT": measuredReport(t, 200, "live", true)})
	raw, err := readReport(cfg.probeReport)
	is.NoErr(err)
	r, reason := servedReport(raw, cfg, reportAuthentic(cfg, raw), seedWritten.Add(time.Hour))
	is.Equal(reason, "")                      // the report verifies for this configuration
	is.Equal(r.Limits.MeasuredChars, 1350000) // above the bound
	got := applyMeasuredLimits(cfg, seedWritten.Add(time.Hour), quiet).upstream
	is.Equal(got.MaxQueryChars, pmconfig.MaxQueryCharsBound) // clamped
	is.Equal(got.MaxQueryChars, 1000000)
	is.Equal(got.MaxQueryCharsSource, budget.SourceMeasured)
	is.Equal(got.MaxToolsUpstream, 13) // the tool count, within its bound, as measured
}

// TestLimitsOfAReportThatDoesNotVerifyAreNeverApplied: the same measurement
// in a report that does not verify for the running gateway (no MAC, too old,
// written against the emulator) leaves the limits as configured.
func TestLimitsOfAReportThatDoesNotVerifyAreNeverApplied(t *testing.T) {
	for name, c := range map[string]struct {
		mode string
		mac  bool
		age  time.Duration
	}{
		"without its MAC": {"live", false, time.Hour},
		"a day too old":   {"live", true, 25 * time.Hour},
		"of the emulator": {"emulator", true, time.Hour},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			cfg := seededConfig(t, map[string]string{"PROBE_REPORT": measuredReport(t, 1, c.mode, c.mac)})
			before := cfg.upstream
			raw, err := readReport(cfg.probeReport)
			is.NoErr(err)
			_, reason := servedReport(raw, cfg, reportAuthentic(cfg, raw), seedWritten.Add(c.age))
			is.True(reason != "") // it does not verify
			got := applyMeasuredLimits(cfg, seedWritten.Add(c.age), quiet).upstream
			is.Equal(got.MaxQueryChars, before.MaxQueryChars) // not the measured 6,750
			is.Equal(got.MaxToolsUpstream, before.MaxToolsUpstream)
			is.True(got.MaxQueryCharsSource != budget.SourceMeasured)
			is.True(got.MaxToolsUpstreamSource != budget.SourceMeasured)
		})
	}
}
