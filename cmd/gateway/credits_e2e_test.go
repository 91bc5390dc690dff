package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/ops"
	"github.com/pmgate/pmgate/ports"
)

// creditsOf reads the upstream_credits member of a JSON answer.
func creditsOf(t *testing.T, body string) *ops.UpstreamCredits {
	t.Helper()
	var v struct {
		Credits *ops.UpstreamCredits `json:"upstream_credits"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, body)
	}
	return v.Credits
}

// Every chat stream's usage event carries the owner's plan (the emulator's
// default is ps2Api's captured-looking fixture): the gateway shows the last
// report, labelled by strategy and with its time, on the control page's live
// view, in /health, in /metrics and in `gateway usage` (JSON and table);
// a warning threshold crossed is logged once per threshold and cycle; the
// access line carries the plan's totals the request's stream reported and no
// cost per request; a test moving the plan moves every view; the credential
// appears nowhere.
func TestTheServicesCreditReportIsShownAsReportedEverywhere(t *testing.T) {
	for _, st := range strategies {
		t.Run(st, func(t *testing.T) {
			is := is.New(t)
			s := serve(t, st, nil)
			c := creditsOf(t, s.get(t, "/admin/api/live"))
			is.True(c != nil && !c.Known)                                                // nothing reported before a stream
			is.True(!strings.Contains(s.get(t, "/metrics"), "pmgate_upstream_credits_")) // and no gauge

			before := time.Now()
			resp := s.post(t, userBody("how much have I spent?", false, ""))
			_, _ = io.ReadAll(resp.Body)
			is.Equal(resp.StatusCode, http.StatusOK)
			plan := s.emu.Credits()

			for _, path := range []string{"/admin/api/live", "/health", "/admin/api/usage"} {
				c := creditsOf(t, s.get(t, path))
				is.True(c != nil && c.Known)                                                  // shown
				is.Equal(c.Strategy, st)                                                      // labelled by strategy
				is.Equal(c.State, "AVAILABLE")                                                // the state
				is.Equal(*c.Usage, int64(plan.Usage))                                         // the usage as reported
				is.Equal(*c.Limit, int64(50000))                                              // the limit as reported
				is.Equal(*c.UsedRatio, float64(plan.Usage)/50000)                             // the ratio
				is.True(c.CycleEnd != nil && c.CycleEnd.Equal(plan.CycleEnd))                 // the cycle's end
				is.Equal(c.Crossed, []ports.CreditThreshold{{Value: 50, Unit: "Percentage"}}) // the threshold crossed
				is.True(c.ReportedAt != nil && !c.ReportedAt.Before(before.Truncate(time.Second)))
				is.True(strings.HasPrefix(c.Label, "as reported by the service at "+c.ReportedAt.Format("15:04 UTC"))) // when, in words
				is.True(strings.HasPrefix(c.NotNow, "Not the credits left now"))                                       // and what it is not
			}

			metrics := s.get(t, "/metrics")
			for _, want := range []string{
				fmt.Sprintf("\npmgate_upstream_credits_usage{strategy=%q} %d\n", st, plan.Usage),
				fmt.Sprintf("\npmgate_upstream_credits_limit{strategy=%q} 50000\n", st),
				fmt.Sprintf("\npmgate_upstream_credits_state{state=\"AVAILABLE\",strategy=%q} 1\n", st),
				fmt.Sprintf("\npmgate_upstream_credits_state{state=\"EXCEEDED\",strategy=%q} 0\n", st),
				fmt.Sprintf("\npmgate_upstream_credits_cycle_end_timestamp_seconds{strategy=%q} %s\n", st, strconv.FormatFloat(float64(plan.CycleEnd.Unix()), 'g', -1, 64)),
				fmt.Sprintf("\npmgate_upstream_credits_warning_thresholds_crossed{strategy=%q} 1\n", st),
				fmt.Sprintf("\npmgate_upstream_credits_reported_timestamp_seconds{strategy=%q} ", st),
			} {
				is.True(strings.Contains(metrics, want)) // the gauge, with the report's time
			}

			var out, errOut bytes.Buffer
			env := map[string]string{"PROVIDER_API_KEY": testKey}
			is.NoErr(run(t.Context(), []string{"usage", "--json", "--url", s.base}, func(k string) string { return env[k] }, &out, &errOut))
			var rep ops.UsageReport
			is.NoErr(json.Unmarshal(out.Bytes(), &rep))
			is.True(rep.UpstreamCredits != nil && rep.UpstreamCredits.Known) // gateway usage --json
			is.Equal(*rep.UpstreamCredits.Usage, int64(plan.Usage))          // the same report
			out.Reset()
			is.NoErr(run(t.Context(), []string{"usage", "--url", s.base}, func(k string) string { return env[k] }, &out, &errOut))
			table := out.String()
			is.True(strings.Contains(table, fmt.Sprintf("Postman credits (%s), as reported by the service at ", st))) // the table, labelled
			is.True(strings.Contains(table, "state AVAILABLE, plan FREE_USER"))                                       // the state
			is.True(strings.Contains(table, "warning threshold 50% crossed"))                                         // the threshold
			is.True(strings.Contains(table, "Not the credits left now"))                                              // what it is not

			// A test moves the plan: every view follows the next report.
			plan.Usage, plan.Thresholds = 46000, []int{50, 90}
			s.emu.SetCredits(plan)
			resp = s.post(t, userBody("and now?", false, ""))
			_, _ = io.ReadAll(resp.Body)
			c = creditsOf(t, s.get(t, "/admin/api/live"))
			is.Equal(*c.Usage, int64(46100)) // moved (plus the query)
			is.Equal(len(c.Crossed), 2)      // both thresholds crossed
			is.True(*c.UsedRatio > 0.9)      // past 90 %

			logs := s.logs.String()
			is.Equal(strings.Count(logs, `"msg":"upstream credit warning threshold crossed, as reported by the service"`), 2) // 50 then 90, once each
			var access []map[string]any
			for _, line := range strings.Split(logs, "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "request" && m["path"] == "/v1/chat/completions" {
					access = append(access, m)
				}
			}
			is.Equal(len(access), 2)
			cr := access[1]["upstream"].(map[string]any)["credit_report"].(map[string]any)
			is.Equal(cr["plan_usage"], float64(46100)) // the access line: the plan's total this request's stream reported
			is.Equal(cr["usage_state"], "AVAILABLE")
			for k := range cr {
				is.True(k == "plan_usage" || k == "plan_limit" || k == "plan_used_ratio" || k == "usage_state") // no cost per request
			}
			for _, text := range []string{logs, metrics, table, s.get(t, "/health"), s.get(t, "/admin/api/live")} {
				is.True(!strings.Contains(text, testCookie) && !strings.Contains(text, testToken)) // never the credential
			}
		})
	}
}
