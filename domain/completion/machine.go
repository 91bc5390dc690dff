package completion

import (
	"fmt"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/fsm"
)

// compiled is everything derived from the rows for one rule.
type compiled struct {
	rule Rule
	// table is the rule's declaration, and machine the engine built from it.
	table   fsm.Table
	machine *fsm.Machine[Tracker, State, Event, struct{}]
	// rows holds the rule's rows in the table's order: machine.Fire returns an
	// index into it.
	rows []*row
}

var compiledRules [len(rules)]compiled

func init() {
	for i, s := range states {
		if s.index() != i {
			panic("completion: state index out of order: " + string(s))
		}
	}
	for i, e := range events {
		if e.index() != i {
			panic("completion: event index out of order: " + string(e))
		}
	}
	ids := map[string]bool{}
	for i := range rows {
		checkRow(&rows[i], ids)
	}
	for i, r := range rules {
		compiledRules[i] = compile(r)
	}
}

// checkRow panics on a mis-declared row: this is wiring, found at start-up.
func checkRow(r *row, ids map[string]bool) {
	bad := func(why string) { panic(fmt.Sprintf("completion: row %s: %s", r.ID, why)) }
	switch {
	case r.ID == "" || ids[r.ID]:
		bad("missing or duplicate id")
	case len(r.Rules) == 0:
		bad("no rule")
	case r.From.index() < 0 || r.From.Terminal():
		bad("From must be a non-terminal state")
	case r.To.index() < 0:
		bad("unknown To state")
	case r.On.index() < 0:
		bad("unknown event")
	case !r.To.Terminal() || r.To.Complete():
		if r.Code != "" {
			bad("only non-completion outcomes carry a code")
		}
	case r.Code == "":
		if r.To != Failed || r.On != Failure {
			bad("a non-completion outcome needs a code unless a Failure carries it")
		}
	default:
		if _, ok := errs.Lookup(r.Code); !ok {
			bad("code not in the catalog")
		}
	}
	for _, rule := range r.Rules {
		if rule.index() < 0 {
			bad("unknown rule")
		}
	}
	ids[r.ID] = true
}

// compile derives one rule's table and machine and checks that every
// (non-terminal state, event) pair has exactly one row.
func compile(rule Rule) compiled {
	c := compiled{rule: rule}
	t := fsm.Table{
		Name:    "completion-" + string(rule),
		Title:   "Completion outcome machine, rule " + string(rule),
		Initial: string(Awaiting),
		Notes:   append([]string{ruleNote[rule]}, commonNotes...),
	}
	reached := map[State]bool{}
	var cells [numNonTerminal][numEvents]*row
	for i := range rows {
		r := &rows[i]
		if !r.has(rule) {
			continue
		}
		cell := &cells[r.From.index()][r.On.index()]
		if *cell != nil {
			panic(fmt.Sprintf("completion: rule %s: rows %s and %s both declare (%s, %s)", rule, (*cell).ID, r.ID, r.From, r.On))
		}
		*cell = r
		reached[r.To] = true
		c.rows = append(c.rows, r)
		t.Rows = append(t.Rows, fsm.Row{ID: r.ID, From: string(r.From), On: string(r.On), To: string(r.To), Result: r.result(), Ref: r.Ref})
	}
	for si := range numNonTerminal {
		for ei := range numEvents {
			if cells[si][ei] == nil {
				panic(fmt.Sprintf("completion: rule %s: no row for (%s, %s)", rule, states[si], events[ei]))
			}
		}
		t.States = append(t.States, string(states[si]))
	}
	for _, s := range states[numNonTerminal:] {
		if reached[s] {
			t.States = append(t.States, string(s))
			t.Terminal = append(t.Terminal, string(s))
		}
	}
	c.table = t
	c.machine = fsm.NewMachine(fsm.Spec[Tracker, State, Event, struct{}]{
		Table:      t,
		State:      func(tr *Tracker) *State { return &tr.st },
		Unhandled:  c.unhandled,
		StateIndex: State.index,
		EventIndex: Event.index,
		Number:     func(tr *Tracker) *int { return &tr.num },
	})
	return c
}

func (r *row) has(rule Rule) bool {
	for _, x := range r.Rules {
		if x == rule {
			return true
		}
	}
	return false
}

func compiledFor(rule Rule) *compiled {
	i := rule.index()
	if i < 0 {
		panic(fmt.Sprintf("completion: unknown rule %q", string(rule)))
	}
	return &compiledRules[i]
}

// unhandled is the machine's answer to an event the rule does not accept in
// the current state: a marked error, and nothing changes.
func (c *compiled) unhandled(st State, ev Event) error {
	if st.Terminal() {
		return errs.Newf(errs.InternalError, "completion %s: %s after outcome %s: %w", c.rule, ev, st, ErrEventAfterOutcome)
	}
	return errs.Newf(errs.InternalError, "completion %s: %s undeclared in %s: %w", c.rule, ev, st, ErrUndeclaredEvent)
}

// Table returns the declared machine of a rule in the neutral form used for the
// generated spec. It panics on an unknown rule.
func Table(r Rule) fsm.Table { return compiledFor(r).table }

// result names what the caller observes when the row applies.
func (r *row) result() string {
	switch {
	case r.From == r.To:
		return "no change"
	case !r.To.Terminal():
		return "continue"
	case r.To.Complete():
		return "completion"
	case r.Code == "":
		return "error: the code the Failure carries (upstream_failure when none)"
	default:
		return "error: " + string(r.Code)
	}
}

var ruleNote = map[Rule]string{
	RuleLegacyDone:       "access_token rule: only an exact `[DONE]` followed by a clean EOF completes (a `done` event is a known event that ends nothing); EOF first is `upstream_incomplete_stream`; data after `[DONE]` is `upstream_data_after_done`.",
	RuleExplicitOnly:     "web_session rule `explicit_only` (the strict reading: only an explicit end counts): only `[DONE]`, or a `done` event after output, followed by a clean EOF completes; EOF after output is `upstream_completion_ambiguous`, EOF without output `upstream_empty_stream`.",
	RuleUsageAfterOutput: "web_session rule `usage_after_output_v1` (the default of POSTMAN_WEB_SESSION_TERMINAL_RULE): besides `[DONE]` or a `done` event after output (each followed by a clean EOF), a clean EOF completes when output was seen, a usage event came after the last output event and no failure was seen.",
}

var commonNotes = []string{
	"Terminal states absorb: any event after an outcome is an `internal_error` and changes nothing.",
	"`Failure` carries a stable code; `ReadError` is `upstream_connection_lost`; `Abort` is `client_cancelled`; `Timeout` is `upstream_timeout`.",
	"`EOFPartial` is EOF with a partial SSE frame, UTF-8 sequence or JSON payload buffered: it never completes.",
	"Every event is answered from an index derived from these rows (a self-loop, `no change`, allocates nothing); the stateless machine built from the same rows draws the graph and is checked against the index at start-up.",
}

// Graph returns the DOT graph of a rule's machine, drawn by stateless from the
// rule's rows. It panics on an unknown rule.
func Graph(r Rule) string { return compiledFor(r).machine.Graph() }
