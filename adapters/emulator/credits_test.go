package emulator_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/matryer/is"
)

// The usage event reports the owner's plan with the fields of ps2Api's
// captured-looking event (ossfunc_test.go:37): every answered stream adds to
// the plan's usage, and a test moves the plan with SetCredits.
func TestUsageEventsReportThePlanAndATestMovesIt(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	raw, _ := json.Marshal(userQuery("how much is left?"))
	u := tokenPeer(t, s).turn(raw).first("usage")

	is.Equal(u["userType"], "FREE_USER")     // the fixture's plan
	is.Equal(u["limit"], float64(50000))     // its limit
	is.Equal(u["usage"], float64(28713+100)) // its usage, plus this query
	is.Equal(u["spillage"], float64(2))      // spillage
	is.Equal(u["allowOverage"], false)       // no overage allowed
	is.Equal(u["isTeamPooled"], true)        // a pooled team
	is.Equal(u["usageState"], "AVAILABLE")   // the plan's state
	th := u["warningThresholds"].([]any)[0].(map[string]any)
	is.Equal(th["value"], float64(50)) // one threshold at 50
	is.Equal(th["unit"], "Percentage") // in percent
	cycle := u["usageCycle"].(map[string]any)
	end, err := time.Parse(time.RFC3339, cycle["end"].(string))
	is.NoErr(err)                                   // an RFC 3339 end
	is.True(end.After(time.Now()))                  // the current cycle
	is.True(end.Sub(time.Now()) <= 31*24*time.Hour) // a month at most away

	u = webPeer(t, s).turn(userQuery("and now?")).first("usage")
	is.Equal(u["usage"], float64(28713+200)) // the plan is the account's: it grows across strategies and conversations

	c := s.Credits()
	c.Usage, c.Limit, c.State, c.Thresholds = 390000, 400000, "EXCEEDED", []int{80, 95}
	c.UserType = "PAID_USER"
	s.SetCredits(c)
	u = tokenPeer(t, s).turn(raw).first("usage")
	is.Equal(u["userType"], "PAID_USER")             // moved
	is.Equal(u["limit"], float64(400000))            // moved
	is.Equal(u["usage"], float64(390100))            // moved, plus this query
	is.Equal(u["usageState"], "EXCEEDED")            // the state a test set
	is.Equal(len(u["warningThresholds"].([]any)), 2) // both thresholds
	is.Equal(s.Credits().Usage, 390100)              // what the last event reported
	c.Usage = c.Limit
	s.SetCredits(c)
	u = tokenPeer(t, s).turn(raw).first("usage")
	is.Equal(u["usage"], float64(400000)) // never past the limit by itself
}
