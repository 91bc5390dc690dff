package conversation

import "time"

// Fire applies an arbitrary event with default parameters, for the exhaustive
// (state × event) test; production code uses the typed methods.
func (a *Anchor) Fire(ev Event, now time.Time, p Policy) (Decision, error) {
	return a.fire(ev, input{now: now, policy: p})
}
