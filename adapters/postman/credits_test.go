package postman_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/internal/testkit"
	"github.com/pmgate/pmgate/ports"
)

// logRecords returns the JSON records of buf with the message msg.
func logRecords(t *testing.T, buf *logBuffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

const thresholdMsg = "upstream credit warning threshold crossed, as reported by the service"

// Every stream's usage event carries the plan (ps2Api ossfunc_test.go:37):
// the adapter keeps the last report, labelled by its strategy and its time,
// and logs each warning threshold it shows crossed once per threshold and
// cycle.
func TestTheServicesCreditReportIsKeptAndEachThresholdLoggedOncePerCycle(t *testing.T) {
	t.Parallel()
	for _, sc := range strategies {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			emu := startEmu(t) // its own plan
			var logs logBuffer
			c := sc.client(t, emu, nil, postmanLogger(&logs))
			is.True(!c.Credits().Known) // nothing reported before any stream

			before := time.Now()
			_, d, err := open(t, c, userText("hi"))
			is.NoErr(err)
			is.Equal(d.err, io.EOF) // a normal answer
			r, plan := c.Credits(), emu.Credits()
			is.True(r.Known)                                                                 // kept
			is.Equal(r.Strategy, sc.name)                                                    // labelled by the strategy
			is.Equal(r.State, "AVAILABLE")                                                   // usageState
			is.Equal(r.UserType, "FREE_USER")                                                // userType
			is.True(r.HasLimit && r.Limit == 50000)                                          // limit as reported
			is.True(r.HasUsage && r.Usage == int64(plan.Usage))                              // usage as reported
			is.True(r.HasSpillage && r.Spillage == 2)                                        // spillage
			is.True(r.HasOverage && r.Overage == 0)                                          // overage
			is.True(r.TeamPooled != nil && *r.TeamPooled)                                    // isTeamPooled
			is.True(r.AllowOverage != nil && !*r.AllowOverage)                               // allowOverage
			is.Equal(r.Thresholds, []ports.CreditThreshold{{Value: 50, Unit: "Percentage"}}) // warningThresholds
			is.True(r.CycleEnd.Equal(plan.CycleEnd) && r.CycleStart.Equal(plan.CycleStart))  // usageCycle
			is.True(!r.Seen.Before(before) && !r.Seen.After(time.Now()))                     // when it arrived
			ratio, ok := r.UsedRatio()
			is.True(ok && ratio > 0.5 && ratio < 0.6) // 28813 / 50000

			lines := logRecords(t, &logs, thresholdMsg)
			is.Equal(len(lines), 1)                              // the 50 % threshold, once
			is.Equal(lines[0]["threshold_percent"], float64(50)) // named
			is.Equal(lines[0]["strategy"], sc.name)              // by strategy
			is.Equal(lines[0]["level"], "WARN")                  // a warning
			is.Equal(lines[0]["cycle_end"], plan.CycleEnd.Format(time.RFC3339))

			_, _, err = open(t, c, userText("again"))
			is.NoErr(err)
			is.Equal(len(logRecords(t, &logs, thresholdMsg)), 1)    // the same threshold in the same cycle: not again
			is.Equal(c.Credits().Usage, int64(emu.Credits().Usage)) // the latest report replaced the first

			plan = emu.Credits()
			plan.Thresholds = []int{50, 90}
			emu.SetCredits(plan)
			_, _, err = open(t, c, userText("below ninety"))
			is.NoErr(err)
			is.Equal(len(logRecords(t, &logs, thresholdMsg)), 1) // 90 % not reached
			plan.Usage = 45000
			emu.SetCredits(plan)
			_, _, err = open(t, c, userText("past ninety"))
			is.NoErr(err)
			lines = logRecords(t, &logs, thresholdMsg)
			is.Equal(len(lines), 2)                              // 90 % crossed: one line
			is.Equal(lines[1]["threshold_percent"], float64(90)) // for 90 only

			plan = emu.Credits()
			plan.CycleStart, plan.CycleEnd = plan.CycleEnd, plan.CycleEnd.AddDate(0, 1, 0)
			emu.SetCredits(plan)
			_, _, err = open(t, c, userText("next cycle"))
			is.NoErr(err)
			is.Equal(len(logRecords(t, &logs, thresholdMsg)), 4) // a new cycle: both thresholds again

			for _, l := range strings.Split(logs.String(), "\n") {
				is.True(!strings.Contains(l, testkit.Cookie) && !strings.Contains(l, testkit.Token)) // never the credential
			}
		})
	}
}

// An exhausted or blocked state is the owner's news too: the report is kept
// though the stream fails.
func TestAnExhaustedReportIsKeptThoughTheStreamFails(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	for _, sc := range strategies {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			c := sc.client(t, emu, nil)
			_, d, err := open(t, c, userText("hi #scenario="+emulator.ScenarioQuotaUsageCycle))
			is.NoErr(err)
			is.Equal(errs.CodeOf(d.err), errs.UpstreamQuotaExhausted) // the stream fails as before
			r := c.Credits()
			is.Equal(r.State, "EXCEEDED")                                     // and the report says why
			is.Equal(r.CycleEnd.Format(time.RFC3339), emulator.UsageCycleEnd) // with the fixture's cycle

			_, d, err = open(t, c, userText("hi #scenario="+emulator.ScenarioUsageBlocked))
			is.NoErr(err)
			is.Equal(errs.CodeOf(d.err), errs.UpstreamAccountBlocked) // blocked, as before
			is.Equal(c.Credits().State, "BLOCKED")                    // kept
		})
	}
}

// The stream's outcome line (the access line's "upstream" group) carries the
// plan's totals the service reported during the request, and nothing when it
// reported none: no cost per request, which the service never reports.
func TestTheOutcomeLineCarriesTheReportOnlyWhenTheServiceSentOne(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	emu := startEmu(t)
	var logs logBuffer
	c := tokenClient(t, emu, nil, postmanLogger(&logs))
	_, _, err := open(t, c, userText("hi"))
	is.NoErr(err)
	done := logRecords(t, &logs, "upstream stream complete")
	is.Equal(len(done), 1)
	cr, ok := done[0]["credit_report"].(map[string]any)
	is.True(ok)                                              // the report of this request's stream
	is.Equal(cr["plan_usage"], float64(emu.Credits().Usage)) // the plan's total as reported
	is.Equal(cr["plan_limit"], float64(50000))               // and its limit
	is.Equal(cr["usage_state"], "AVAILABLE")                 // and state
	is.Equal(len(cr), 4)                                     // with the ratio; no per-request cost

	var none logBuffer
	f := newFakeTLS(t, sseHandler(okStream)) // a usage event with tokens only
	c = f.client(t, "access_token", postmanLogger(&none))
	_, _, err = open(t, c, userText("hi"))
	is.NoErr(err)
	done = logRecords(t, &none, "upstream stream complete")
	is.Equal(len(done), 1)
	_, has := done[0]["credit_report"]
	is.True(!has)               // nothing reported, nothing written
	is.True(!c.Credits().Known) // and nothing kept
}

func postmanLogger(l *logBuffer) postman.Option { return postman.WithLogger(newLogger(l)) }
