package fsm

import (
	"context"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/redact"
	"github.com/qmuntal/stateless"
)

// Spec is what a record machine is built from: its declaration (the Table
// whose rows it fires), where a firing keeps the record's state, and the entry
// actions that update the record. F is the firing: one transition's
// parameters, holding (a pointer to) the record; S and E are the machine's
// state and event types, whose values are the Table's strings.
type Spec[F any, S, E ~string] struct {
	// Table declares the states and rows. A row whose To equals its From is an
	// internal transition: the state stays and no entry action runs. Its Name
	// prefixes the machine's errors.
	Table Table
	// State returns where the firing's record keeps its state.
	State func(f *F) *S
	// Entry lists the entry actions, in the order they run.
	Entry []Entry[S, E]
	// Illegal marks the error of an event that has no row in the current
	// state; Hint is the hint attached to it.
	Illegal error
	Hint    string
}

// Entry is an action run when the machine enters each state of In: after any
// event, or only after From when From is set. Do receives the firing (*F) as
// its one argument. It should be a named function: stateless draws its name
// in the DOT graph.
type Entry[S, E ~string] struct {
	Do   func(ctx context.Context, args ...any) error
	From E
	In   []S
}

// Machine is a stateless machine built once from a Spec and shared: it is
// immutable after NewMachine, every state is configured up front, it fires in
// immediate mode, and the state lives in the record reached through each
// firing, so concurrent use on different records is safe.
type Machine[F any, S, E ~string] struct {
	name  string
	sm    *stateless.StateMachine
	state func(*F) *S
	index map[[2]string]int
}

type firingKey struct{}

// NewMachine builds the machine of spec. It panics when two rows declare the
// same (state, event) pair: that is a mis-declaration found at start-up.
func NewMachine[F any, S, E ~string](spec Spec[F, S, E]) *Machine[F, S, E] {
	t := spec.Table
	m := &Machine[F, S, E]{name: t.Name, state: spec.State, index: make(map[[2]string]int, len(t.Rows))}
	firingOf := func(ctx context.Context) *F {
		f, _ := ctx.Value(firingKey{}).(*F)
		return f
	}
	m.sm = stateless.NewStateMachineWithExternalStorage(
		func(ctx context.Context) (stateless.State, error) {
			if f := firingOf(ctx); f != nil {
				return *spec.State(f), nil
			}
			return S(t.Initial), nil
		},
		func(ctx context.Context, s stateless.State) error {
			*spec.State(firingOf(ctx)) = s.(S)
			return nil
		},
		stateless.FiringImmediate)
	for i, r := range t.Rows {
		k := [2]string{r.From, r.On}
		if _, dup := m.index[k]; dup {
			panic(t.Name + ": two rows for (" + r.From + ", " + r.On + ")")
		}
		m.index[k] = i
	}
	for _, s := range t.States {
		cfg := m.sm.Configure(S(s))
		for _, r := range t.Rows {
			switch {
			case r.From != s:
			case r.To == r.From:
				cfg.InternalTransition(E(r.On), noMutation)
			default:
				cfg.Permit(E(r.On), S(r.To))
			}
		}
	}
	for _, en := range spec.Entry {
		for _, s := range en.In {
			if en.From != "" {
				m.sm.Configure(s).OnEntryFrom(en.From, en.Do)
			} else {
				m.sm.Configure(s).OnEntry(en.Do)
			}
		}
	}
	m.sm.OnUnhandledTrigger(func(_ context.Context, s stateless.State, tr stateless.Trigger, _ []string) error {
		return errors.WithHint(
			errors.Mark(errors.Newf("%s: %s not permitted in %s", redact.Safe(t.Name), tr.(E), s.(S)), spec.Illegal),
			spec.Hint)
	})
	return m
}

func noMutation(context.Context, ...any) error { return nil }

// Fire applies ev to the record of f and returns the index of the applied
// row in the Table's rows. An event without a row in the record's state is an error marked with
// the spec's Illegal error, and the record is unchanged.
func (m *Machine[F, S, E]) Fire(f *F, ev E) (int, error) {
	from := *m.state(f)
	i, ok := m.index[[2]string{string(from), string(ev)}]
	if err := m.sm.FireCtx(context.WithValue(context.Background(), firingKey{}, f), ev, f); err != nil {
		return 0, err
	}
	if !ok { // the machine accepted an event the rows do not declare: mis-wiring
		return 0, errors.AssertionFailedf("%s: fired undeclared %s in %s", redact.Safe(m.name), ev, from)
	}
	return i, nil
}

// Graph returns the DOT rendering of the machine, from stateless.
func (m *Machine[F, S, E]) Graph() string { return m.sm.ToGraph() }
