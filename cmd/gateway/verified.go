package main

import (
	"crypto/hmac"
	"slices"
	"strings"
	"time"
)

// reportMaxAge is how long a passing probe report keeps the upstream verified.
const reportMaxAge = 24 * time.Hour

// probeVerification is /health's upstream_verified: true only while the
// PROBE_REPORT file passes verify for the running configuration (so a report
// that ages past 24 h turns it false again). The file is read once at start-up;
// its digest is the one /health shows.
func probeVerification(cfg config, now func() time.Time) func() (bool, map[string]any) {
	if cfg.probeReport == "" {
		return func() (bool, map[string]any) {
			return false, map[string]any{"upstream_verified_reason": "no PROBE_REPORT is configured"}
		}
	}
	raw, err := readReport(cfg.probeReport)
	if err != nil {
		return func() (bool, map[string]any) {
			return false, map[string]any{"upstream_verified_reason": "PROBE_REPORT could not be read"}
		}
	}
	digest := reportDigest(raw)
	mac, macErr := readReport(macPath(cfg.probeReport))
	want := reportMAC(cfg.upstream, raw)
	authentic := macErr == nil && want != "" && hmac.Equal([]byte(strings.TrimSpace(string(mac))), []byte(want))
	return func() (bool, map[string]any) {
		r, v := verifyReport(raw, verifyOptions{now: now(), maxAge: reportMaxAge, version: version, commit: buildCommit(),
			fingerprint: fingerprint(cfg.upstream), strategy: string(cfg.upstream.Strategy), terminalRule: terminalRuleOf(cfg),
			secrets: append(cfg.upstream.Secrets(), cfg.apiKey, cfg.upstream.WorkspaceID)})
		if !v.ok() {
			return false, map[string]any{"upstream_verified_reason": v.failures[0], "upstream_report_digest": digest}
		}
		// verify accepts an emulator report (CI checks the probe offline);
		// the upstream is verified only by a live one, about a served model.
		if r.Mode != "live" {
			return false, map[string]any{"upstream_verified_reason": "mode: the report was not written against the live upstream", "upstream_report_digest": digest}
		}
		if !slices.Contains(cfg.request.models, r.Model.Public) {
			return false, map[string]any{"upstream_verified_reason": "model: the report's model is not one this configuration serves", "upstream_report_digest": digest}
		}
		if !authentic {
			return false, map[string]any{"upstream_verified_reason": "mac: PROBE_REPORT.mac is missing or was not made with this configuration's credential", "upstream_report_digest": digest}
		}
		fields := map[string]any{"upstream_verified_at": r.WrittenAt, "upstream_report_digest": digest}
		if at, err := time.Parse(time.RFC3339, r.WrittenAt); err == nil {
			// Until when it stays verified: the report's age limit.
			fields["upstream_verified_until"] = at.Add(reportMaxAge).UTC().Format(time.RFC3339)
		}
		return true, fields
	}
}
