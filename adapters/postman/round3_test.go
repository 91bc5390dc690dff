package postman_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports/porttest"
)

// The service as the round-3 evidence saw it (docs/UPSTREAM.md, "The service,
// round 3"); each test names its source.

// ps2Api internal/provider/errors.go:109-113 and router_test.go:152-166:
// Cloudflare's 403 block page (text/html, "Attention Required! | Cloudflare",
// Cf-Ray, Cf-Mitigated) is the firewall, not the origin refusing the
// credential. Only that page is; an origin's 403 stays an auth failure.
func TestAFirewallBlockPageIsNotACredentialFailure(t *testing.T) {
	t.Parallel()
	page := "<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title></head><body>Sorry, you have been blocked</body></html>"
	for _, tc := range []struct {
		name    string
		header  map[string]string
		body    string
		web     errs.Code
		token   errs.Code
		blocked bool
	}{
		{name: "cloudflare page", header: map[string]string{"Content-Type": "text/html; charset=UTF-8", "Server": "cloudflare", "Cf-Ray": "8f-FRA"}, body: page, blocked: true},
		{name: "cf-mitigated", header: map[string]string{"Content-Type": "text/html", "Cf-Mitigated": "challenge"}, body: "<html></html>", blocked: true},
		{name: "origin json", header: map[string]string{"Content-Type": "application/json", "Server": "cloudflare"}, body: `{"error":"Forbidden"}`,
			web: errs.UpstreamWebSessionAuthFailed, token: errs.UpstreamAuthFailed},
		{name: "origin html", header: map[string]string{"Content-Type": "text/html"}, body: "<html><body>Forbidden</body></html>",
			web: errs.UpstreamWebSessionAuthFailed, token: errs.UpstreamAuthFailed},
		{name: "json naming cloudflare", header: map[string]string{"Content-Type": "application/json"}, body: `{"error":"cloudflare"}`,
			web: errs.UpstreamWebSessionAuthFailed, token: errs.UpstreamAuthFailed},
	} {
		f := newFakeTLS(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			for k, v := range tc.header {
				w.Header().Set(k, v)
			}
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(tc.body))
		}))
		for _, strategy := range []string{"web_session", "access_token"} {
			t.Run(tc.name+"/"+strategy, func(t *testing.T) {
				is := is.New(t)
				_, _, err := open(t, f.client(t, strategy), userText("hello"))
				want := tc.token
				if strategy == "web_session" {
					want = tc.web
				}
				if tc.blocked {
					want = errs.UpstreamFirewallBlocked
				}
				is.Equal(errs.CodeOf(err), want)                                                                // the page decides, on both strategies
				is.True(!strings.Contains(err.Error(), "Attention") && !strings.Contains(err.Error(), "Sorry")) // the page's text is never kept
			})
		}
	}
}

// The emulator's firewall_block scenario answers like the page above, and the
// answer is never "not sent" (the firewall may sit after other hops) nor
// retryable.
func TestTheEmulatorsFirewallBlockIsTheFirewallCode(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	for _, sc := range strategies {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			_, _, err := open(t, sc.client(t, emu, nil), userText("hi #scenario="+emulator.ScenarioFirewallBlock))
			is.Equal(errs.CodeOf(err), errs.UpstreamFirewallBlocked)           // its own code
			is.True(!errs.Has(err, errs.UpstreamWebSessionAuthFailed))         // not the cookie's
			is.True(!errs.MustEntry(errs.UpstreamFirewallBlocked).Retryable)   // never retried
			is.True(!strings.Contains(errs.Redact(err), "Attention Required")) // nothing of the page in the log
		})
	}
}

// ps2Api internal/provider/ossfunc_test.go:37 (a captured-looking usage event
// with usageCycle) and quota_probe.go applyUsageState: EXCEEDED stays
// upstream_quota_exhausted, and the answer names the cycle's end.
func TestAnExhaustedQuotaNamesTheCycleEnd(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	for _, sc := range strategies {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			_, d, err := open(t, sc.client(t, emu, nil), userText("hi #scenario="+emulator.ScenarioQuotaUsageCycle))
			is.NoErr(err)
			is.Equal(errs.CodeOf(d.err), errs.UpstreamQuotaExhausted) // still the quota
			var pd interface{ PublicDetail() string }
			is.True(errors.As(d.err, &pd))                                       // with a sentence for the client
			is.True(strings.Contains(pd.PublicDetail(), emulator.UsageCycleEnd)) // naming the cycle's end
			is.True(strings.HasSuffix(pd.PublicDetail(), "."))                   // as a sentence

			_, d, err = open(t, sc.client(t, emu, nil), userText("hi #scenario="+emulator.ScenarioQuotaUsageState))
			is.NoErr(err)
			is.Equal(errs.CodeOf(d.err), errs.UpstreamQuotaExhausted) // without a cycle: the quota alone
			is.True(!errors.As(d.err, &pd))                           // and no invented end
		})
	}
}

// ps2Api sse.go:133-136 and router_test.go:299: usageState BLOCKED means the
// account is blocked, which is not a quota and not an unknown shape.
func TestABlockedAccountIsItsOwnCode(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	for _, sc := range strategies {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			_, d, err := open(t, sc.client(t, emu, nil), userText("hi #scenario="+emulator.ScenarioUsageBlocked))
			is.NoErr(err)
			is.Equal(errs.CodeOf(d.err), errs.UpstreamAccountBlocked) // not upstream_quota_exhausted nor upstream_unverified_event_shape
		})
	}
}

// The usage event's position and fields, as the probe records them (the note's
// P5): ps2Api's traces put usage before the output (router_test.go:299-304,
// the emulator's default web order), its fixture carries spillage,
// allowOverage, warningThresholds, usageCycle and isTeamPooled besides the
// usual fields (ossfunc_test.go:37): the emulator's plan report, on every
// usage event (scenario usage_full_fields too).
func TestTheEvidenceNamesTheUsagePositionAndFields(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	full := []string{"allowOverage", "completionTokens", "isTeamPooled", "limit", "overage", "promptTokens", "spillage",
		"totalTokens", "usage", "usageCycle", "usageState", "userType", "warningThresholds"}
	for _, c := range []struct {
		scenario, position string
		fields             []string
	}{
		{"", postman.UsageBeforeOutput, full},
		{emulator.ScenarioUsageLast, postman.UsageAfterOutput, full},
		{emulator.ScenarioUsageAbsent, postman.UsageNone, []string{}},
		{emulator.ScenarioEmptyDone, postman.UsageNoOutput, full},
		{emulator.ScenarioUsageFullFields, postman.UsageBeforeOutput, full}, // where the default order puts usage
	} {
		t.Run(c.scenario, func(t *testing.T) {
			is := is.New(t)
			x := &porttest.Observed{}
			web := webClient(t, emu, nil, postman.WithObserver(x), postman.WithStreamEvidence())
			q := "hello"
			if c.scenario != "" {
				q += " #scenario=" + c.scenario
			}
			_, _, _ = open(t, web, userText(q))
			evs := x.Take()
			is.Equal(len(evs), 1)
			ev := evs[0].Exchange.Evidence
			is.Equal(ev.UsagePosition, c.position) // where the usage sat
			is.Equal(ev.UsageFields, c.fields)     // its field names, never values
		})
	}
}
