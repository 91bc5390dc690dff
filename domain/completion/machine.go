package completion

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/qmuntal/stateless"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/fsm"
)

// compiled is everything derived from the rows for one rule.
type compiled struct {
	rule Rule
	// index holds, for each non-terminal state and event, the rule's one row. It is
	// the fast path for self-loops and the source of row ids for state changes.
	index [numNonTerminal][numEvents]*row
	// states lists the rule's states: the non-terminal ones, then the terminal
	// ones its rows reach, in declaration order. terminal is the second part.
	states   []State
	terminal []State
	// from lists the rule's rows by source state, in declaration order.
	from map[State][]*row
}

var (
	compiledRules [len(rules)]compiled

	// Boxed states and events, built once, so that configuring and firing the
	// stateless machine does not allocate an interface value per call.
	boxedStates [numStates]stateless.State
	boxedEvents [numEvents]stateless.Trigger

	codeType = reflect.TypeOf(errs.Code(""))
)

func init() {
	for i, s := range states {
		if s.index() != i {
			panic("completion: state index out of order: " + string(s))
		}
		boxedStates[i] = s
	}
	for i, e := range events {
		if e.index() != i {
			panic("completion: event index out of order: " + string(e))
		}
		boxedEvents[i] = e
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

// compile derives one rule's index and state lists and checks that every
// (non-terminal state, event) pair has exactly one row.
func compile(rule Rule) compiled {
	c := compiled{rule: rule, from: map[State][]*row{}}
	reached := map[State]bool{}
	for i := range rows {
		r := &rows[i]
		if !r.has(rule) {
			continue
		}
		cell := &c.index[r.From.index()][r.On.index()]
		if *cell != nil {
			panic(fmt.Sprintf("completion: rule %s: rows %s and %s both declare (%s, %s)", rule, (*cell).ID, r.ID, r.From, r.On))
		}
		*cell = r
		c.from[r.From] = append(c.from[r.From], r)
		reached[r.To] = true
	}
	for si := range numNonTerminal {
		for ei := range numEvents {
			if c.index[si][ei] == nil {
				panic(fmt.Sprintf("completion: rule %s: no row for (%s, %s)", rule, states[si], events[ei]))
			}
		}
	}
	c.states = append(c.states, states[:numNonTerminal]...)
	for _, s := range states[numNonTerminal:] {
		if reached[s] {
			c.terminal = append(c.terminal, s)
		}
	}
	c.states = append(c.states, c.terminal...)
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

// noChange is the action of every self-loop: the event was legal and changes
// nothing. It is named so that the DOT output stays readable and stable.
func noChange(context.Context, ...any) error { return nil }

// binding is one stateless machine configured for a rule, with its external
// storage pointing at the tracker it currently serves. A binding serves exactly
// one tracker at a time; trackers return theirs to the rule's pool once they
// reach an outcome, so that the next stream does not pay for configuring a
// machine again.
type binding struct {
	t  *Tracker
	sm *stateless.StateMachine
}

// pools holds idle bindings per rule. Pooling is an optimisation only: a binding
// carries no state of its own (the state lives in the Tracker).
var pools [len(rules)]sync.Pool

// acquire returns a binding serving t, from the pool or freshly built.
func (c *compiled) acquire(t *Tracker) *binding {
	b, _ := pools[c.rule.index()].Get().(*binding)
	if b == nil {
		b = &binding{}
		b.sm = c.build(b)
	}
	b.t = t
	return b
}

// release returns a binding to the pool; it must no longer be used.
func (c *compiled) release(b *binding) {
	b.t = nil
	pools[c.rule.index()].Put(b)
}

// build configures a stateless machine from the rule's rows: one Configure chain
// per state, Permit for state changes and InternalTransition for self-loops.
// Terminal states are configured without transitions, so that they appear in the
// graph and every event in them is unhandled. This is the only place that calls
// Permit.
func (c *compiled) build(b *binding) *stateless.StateMachine {
	sm := stateless.NewStateMachineWithExternalStorage(b.accessState, b.mutateState, stateless.FiringImmediate)
	sm.SetTriggerParameters(boxedEvents[Failure.index()], codeType)
	for _, s := range c.states {
		cfg := sm.Configure(boxedStates[s.index()])
		for _, r := range c.from[s] {
			if r.From == r.To {
				cfg.InternalTransition(boxedEvents[r.On.index()], noChange)
			} else {
				cfg.Permit(boxedEvents[r.On.index()], boxedStates[r.To.index()])
			}
		}
	}
	sm.OnUnhandledTrigger(b.unhandled)
	return sm
}

func (b *binding) accessState(context.Context) (stateless.State, error) {
	return boxedStates[b.t.si], nil
}

func (b *binding) mutateState(_ context.Context, s stateless.State) error {
	st := s.(State)
	b.t.st, b.t.si = st, st.index()
	return nil
}

// unhandled is the machine's OnUnhandledTrigger hook: an event the rule does not
// accept in the current state is a marked error and changes nothing.
func (b *binding) unhandled(_ context.Context, s stateless.State, trig stateless.Trigger, _ []string) error {
	st, ev, rule := s.(State), trig.(Event), b.t.c.rule
	if st.Terminal() {
		return errs.Newf(errs.InternalError, "completion %s: %s after outcome %s: %w", rule, ev, st, ErrEventAfterOutcome)
	}
	return errs.Newf(errs.InternalError, "completion %s: %s undeclared in %s: %w", rule, ev, st, ErrUndeclaredEvent)
}

// Table returns the declared machine of a rule in the neutral form used for the
// generated spec. It panics on an unknown rule.
func Table(r Rule) fsm.Table {
	c := compiledFor(r)
	t := fsm.Table{
		Name:    "completion-" + string(r),
		Title:   "Completion outcome machine, rule " + string(r),
		Initial: string(Awaiting),
		Notes:   append([]string{ruleNote[r]}, commonNotes...),
	}
	for _, s := range c.states {
		t.States = append(t.States, string(s))
	}
	for _, s := range c.terminal {
		t.Terminal = append(t.Terminal, string(s))
	}
	for i := range rows {
		row := &rows[i]
		if !row.has(r) {
			continue
		}
		t.Rows = append(t.Rows, fsm.Row{
			ID:     row.ID,
			From:   string(row.From),
			On:     string(row.On),
			To:     string(row.To),
			Result: row.result(),
			Ref:    row.Ref,
		})
	}
	return t
}

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
	"Self-loops (`no change`) are taken by an index derived from these rows; only state changes fire the stateless machine.",
}

// Graph returns the DOT graph of a rule's stateless machine, built afresh and
// bound to a tracker in AWAITING. It panics on an unknown rule.
func Graph(r Rule) string {
	c := compiledFor(r)
	b := &binding{t: &Tracker{c: c, st: Awaiting}}
	return c.build(b).ToGraph()
}
