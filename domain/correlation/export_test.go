package correlation

import (
	"time"

	"github.com/pmgate/pmgate/domain/errs"
)

// Fire applies an arbitrary event with default parameters, for the exhaustive
// (state × event) test; production code uses the typed methods.
func (g *Group) Fire(ev Event, now time.Time, p Policy) (Decision, error) {
	return g.fire(ev, input{now: now, policy: p})
}

// ValidateCode is the code of Validate's event: the one its PENDING row
// answers with, or "" for a valid submission. Tests only.
func ValidateCode(g Group, s Submission) errs.Code {
	ev := Validate(g, s)
	if ev == "" {
		return ""
	}
	for _, r := range rows {
		if r.from == Pending && r.on == ev {
			return r.code
		}
	}
	panic("correlation: Validate returned an event without a PENDING row: " + string(ev))
}
