package main

import (
	"crypto/hmac"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/pmgate/pmgate/adapters/postman/pmconfig"
	"github.com/pmgate/pmgate/domain/budget"
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
	authentic := reportAuthentic(cfg, raw)
	return func() (bool, map[string]any) {
		r, reason := servedReport(raw, cfg, authentic, now())
		if reason != "" {
			return false, map[string]any{"upstream_verified_reason": reason, "upstream_report_digest": digest}
		}
		fields := map[string]any{"upstream_verified_at": r.WrittenAt, "upstream_report_digest": digest}
		if at, err := time.Parse(time.RFC3339, r.WrittenAt); err == nil {
			// Until when it stays verified: the report's age limit.
			fields["upstream_verified_until"] = at.Add(reportMaxAge).UTC().Format(time.RFC3339)
		}
		return true, fields
	}
}

// reportAuthentic says whether PROBE_REPORT.mac authenticates raw under this
// configuration's credential (docs/PROBE.md).
func reportAuthentic(cfg config, raw []byte) bool {
	mac, err := readReport(macPath(cfg.probeReport))
	want := reportMAC(cfg.upstream, raw)
	return err == nil && want != "" && hmac.Equal([]byte(strings.TrimSpace(string(mac))), []byte(want))
}

// servedReport is the one rule of a report that verifies the running
// gateway's upstream, for /health and for the measured limits alike: it
// passes verify for this configuration at now, and — since verify also accepts
// an emulator report (CI checks the probe offline) — it was written live,
// about a served model, and its MAC is authentic. reason is "" when it holds.
func servedReport(raw []byte, cfg config, authentic bool, now time.Time) (probeReport, string) {
	r, v := verifyServed(raw, cfg, now)
	switch {
	case !v.ok():
		return r, v.failures[0]
	case r.Mode != "live":
		return r, "mode: the report was not written against the live upstream"
	case !slices.Contains(cfg.request.models, r.Model.Public):
		return r, "model: the report's model is not one this configuration serves"
	case !authentic:
		return r, "mac: PROBE_REPORT.mac is missing or was not made with this configuration's credential"
	}
	return r, ""
}

// verifyServed verifies a PROBE_REPORT's bytes for the running configuration
// at now: the one set of options for /health and for the measured limits.
func verifyServed(raw []byte, cfg config, now time.Time) (probeReport, verdict) {
	return verifyReport(raw, verifyOptions{now: now, maxAge: reportMaxAge, version: version, commit: buildCommit(),
		fingerprint: fingerprint(cfg.upstream), strategy: string(cfg.upstream.Strategy), terminalRule: terminalRuleOf(cfg), models: modelsOf(cfg),
		secrets: append(cfg.upstream.Secrets(), cfg.apiKey, cfg.upstream.WorkspaceID)})
}

// applyMeasuredLimits makes a verified PROBE_REPORT's measured limits the
// gateway's query and tool limits where POSTMAN_MAX_QUERY_CHARS or
// POSTMAN_MAX_TOOLS_UPSTREAM is not set (the setting always wins). It is
// decided once, at start-up: a report that later ages past 24 h turns
// upstream_verified false but does not change the limits of a running
// process. The decision is logged either way.
func applyMeasuredLimits(cfg config, now time.Time, log *slog.Logger) config {
	if cfg.probeReport == "" {
		return cfg
	}
	raw, err := readReport(cfg.probeReport)
	if err != nil {
		return cfg // /health says why it is not verified
	}
	r, reason := servedReport(raw, cfg, reportAuthentic(cfg, raw), now)
	if reason == "" {
		cfg.upstream = withMeasuredParallel(cfg.upstream, r, log)
	}
	if reason != "" || r.Limits == nil {
		log.Info("upstream limits: not measured by a verified report", "max_query_chars", cfg.upstream.MaxQueryChars,
			"max_tools_upstream", cfg.upstream.MaxToolsUpstream)
		return cfg
	}
	u := &cfg.upstream
	if n := r.Limits.MeasuredChars; n > 0 && u.MaxQueryCharsSource != budget.SourceSetting {
		u.MaxQueryChars, u.MaxQueryCharsSource = min(n, pmconfig.MaxQueryCharsBound), budget.SourceMeasured
	}
	if n := r.Limits.MeasuredTools; n > 0 && u.MaxToolsUpstreamSource != budget.SourceSetting {
		u.MaxToolsUpstream, u.MaxToolsUpstreamSource = min(n, pmconfig.MaxToolsUpstreamBound), budget.SourceMeasured
	}
	log.Info("upstream limits", "max_query_chars", u.MaxQueryChars, "max_query_chars_from", string(u.QueryLimit().Source),
		"max_tools_upstream", u.MaxToolsUpstream, "max_tools_upstream_from", string(u.ToolsLimit().Source))
	return cfg
}

// withMeasuredParallel lets a verified report that saw a parallel group
// answered with toolResponses[] and its group id accepted on web_session
// (--measure-parallel) make the client's parallel_tool_calls decide there,
// where POSTMAN_PARALLEL_TOOL_CALLS is not set (the setting always wins).
// Decided once, at start-up, with the limits, and logged when it applies.
func withMeasuredParallel(u pmconfig.Config, r probeReport, log *slog.Logger) pmconfig.Config {
	if r.Parallel == nil || r.Parallel.Result != "accepted" || u.Strategy != pmconfig.StrategyWebSession ||
		u.ParallelToolCalls != pmconfig.ParallelUnset {
		return u
	}
	u.ParallelMeasured = true
	log.Info("upstream parallel tool calls: the client's choice, measured by the verified probe report")
	return u
}

// parallelHealth is how web_session's isParallelToolCallingSupported is
// decided and why: "on" or "off" from the setting, "client" (the client's
// parallel_tool_calls) from a verified measurement or, on access_token, by
// default, and "off" by default on web_session.
func parallelHealth(u pmconfig.Config) map[string]any {
	switch {
	case u.ParallelToolCalls == pmconfig.ParallelOn:
		return map[string]any{"value": "on", "from": string(budget.SourceSetting)}
	case u.ParallelToolCalls == pmconfig.ParallelOff:
		return map[string]any{"value": "off", "from": string(budget.SourceSetting)}
	case u.Strategy == pmconfig.StrategyWebSession && u.ParallelMeasured:
		return map[string]any{"value": "client", "from": string(budget.SourceMeasured)}
	case u.Strategy == pmconfig.StrategyWebSession:
		return map[string]any{"value": "off", "from": string(budget.SourceDefault)}
	}
	return map[string]any{"value": "client", "from": string(budget.SourceDefault)}
}

// limitsHealth is /health's upstream_limits: each limit that applies and
// where it came from (default, setting, measured), and how parallel tool
// calls are decided.
func limitsHealth(cfg config) map[string]any {
	q, t := cfg.upstream.QueryLimit(), cfg.upstream.ToolsLimit()
	return map[string]any{
		"max_query_chars":     map[string]any{"value": q.Value, "from": string(q.Source)},
		"max_tools_upstream":  map[string]any{"value": t.Value, "from": string(t.Source)},
		"parallel_tool_calls": parallelHealth(cfg.upstream),
	}
}
