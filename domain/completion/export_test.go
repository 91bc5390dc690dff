package completion

import "github.com/pmgate/pmgate/domain/errs"

// SetState puts a tracker directly in s, as if rows had led there. Tests only.
func SetState(t *Tracker, s State) { t.st, t.si, t.code = s, s.index(), "" }

// FireMachine fires the tracker's stateless machine directly, bypassing the
// self-loop index. Tests only.
func FireMachine(t *Tracker, e Event, code errs.Code) error { return t.fireMachine(e, code) }

// IndexRow returns the index entry of (rule, state, event): the row id and target
// state, or ok=false when the index has no row (terminal states). Tests only.
func IndexRow(r Rule, s State, e Event) (id string, to State, ok bool) {
	if s.index() < 0 || s.Terminal() {
		return "", "", false
	}
	row := compiledFor(r).index[s.index()][e.index()]
	if row == nil {
		return "", "", false
	}
	return row.ID, row.To, true
}
