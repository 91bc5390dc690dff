package correlation

import "time"

// Fire applies an arbitrary event with default parameters, for the exhaustive
// (state × event) test; production code uses the typed methods.
func (g *Group) Fire(ev Event, now time.Time, p Policy) (Decision, error) {
	return g.fire(ev, input{now: now, policy: p})
}
