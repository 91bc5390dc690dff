package fsm

import (
	"context"
	"fmt"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/redact"
	"github.com/qmuntal/stateless"
)

// Spec is what a record machine is built from: its declaration (the Table
// whose rows it fires), where the record R keeps its state, and the entry
// actions that update the record. S and E are the machine's state and event
// types, whose values are the Table's strings; A is the typed argument of one
// firing (what the entry actions need besides the record: the time, a policy,
// an id…), passed by value.
type Spec[R any, S, E ~string, A any] struct {
	// Table declares the states and rows. A row whose To equals its From is an
	// internal transition: the state stays and no entry action runs.
	Table Table
	// State returns where the record keeps its state.
	State func(r *R) *S
	// Entry lists the entry actions, in the order they run.
	Entry []Entry[R, S, E, A]
	// Unhandled returns the error of an event that has no row in state from
	// (see Illegal). It runs only on that cold path.
	Unhandled func(from S, ev E) error
	// StateIndex and EventIndex, when set, number the states and events
	// (distinct numbers from 0; -1 for a value that is none) so that firing
	// indexes an array instead of hashing two strings: for a machine fired on
	// every event of a stream. Unset, the machine numbers them itself.
	StateIndex func(S) int
	EventIndex func(E) int
	// Number, when set, returns where the record caches the number of its
	// state (StateIndex's); the machine then reads the number instead of
	// computing it, and keeps it in step with every state change. Whoever sets
	// the record's state otherwise must set the number too.
	Number func(r *R) *int
}

// Entry is an action run when the machine enters each state of In: after any
// event, or only after From when From is set. Do updates the record it is
// given, with the firing's argument.
type Entry[R any, S, E ~string, A any] struct {
	Do   func(r *R, a A)
	From E
	In   []S
}

// Illegal returns the usual Unhandled of a record machine: an error naming the
// machine, event and state, marked with mark and carrying hint.
func Illegal[S, E ~string](name string, mark error, hint string) func(S, E) error {
	return func(s S, ev E) error {
		return errors.WithHint(
			errors.Mark(errors.Newf("%s: %s not permitted in %s", redact.Safe(name), ev, s), mark), hint)
	}
}

// cell is the answer of the index for one (state, event) pair.
type cell[R any, S ~string, A any] struct {
	row   int // index of the row in the Table's rows; -1: no row
	to    S
	toNum int // the number of to
	self  bool
	entry []func(*R, A) // the entry actions the row runs, in order
}

// Machine is built once from a Spec and shared: it is immutable after
// NewMachine and keeps no state of its own (the state lives in the record), so
// concurrent use on different records is safe. Firing is an index lookup
// [state][event] → row: a self-loop changes nothing and allocates nothing; a
// state change sets the record's state and runs the row's entry actions.
type Machine[R any, S, E ~string, A any] struct {
	state     func(*R) *S
	si        func(S) int
	ei        func(E) int
	number    func(*R) *int
	ne        int
	cells     []cell[R, S, A] // [state*ne + event]
	unhandled func(S, E) error
	// graph draws the DOT rendering on first use: only the spec generator
	// asks for it, and drawing every machine at start-up costs a serving
	// gateway about 0.2 MB of its idle heap.
	graph func() string
}

// NewMachine builds the machine of spec. It panics on a mis-declaration, found
// at start-up: a Table that does not validate, an entry action in an
// undeclared state, or an index that disagrees with the stateless machine
// built from the same rows.
func NewMachine[R any, S, E ~string, A any](spec Spec[R, S, E, A]) *Machine[R, S, E, A] {
	t := spec.Table
	if err := t.Validate(); err != nil {
		panic(err)
	}
	m := &Machine[R, S, E, A]{state: spec.State, unhandled: spec.Unhandled,
		si: spec.StateIndex, ei: spec.EventIndex, number: spec.Number}
	if m.si == nil {
		m.si = numbering[S](t.States)
	}
	if m.ei == nil {
		m.ei = numbering[E](t.Events())
	}
	ns := size(t.Name, t.States, m.si)
	ne := size(t.Name, t.Events(), m.ei)
	m.ne = ne
	m.cells = make([]cell[R, S, A], ns*ne)
	for i := range m.cells {
		m.cells[i].row = -1
	}
	for i, r := range t.Rows {
		c := &m.cells[m.si(S(r.From))*ne+m.ei(E(r.On))]
		c.row, c.to, c.toNum, c.self = i, S(r.To), m.si(S(r.To)), r.To == r.From
	}
	for _, en := range spec.Entry {
		for _, s := range en.In {
			if !contains(t.States, string(s)) {
				panic(fmt.Sprintf("fsm %s: entry action in undeclared state %s", t.Name, s))
			}
		}
	}
	for i := range m.cells {
		c := &m.cells[i]
		if c.row < 0 || c.self {
			continue
		}
		ev := E(t.Rows[c.row].On)
		for _, en := range spec.Entry {
			if (en.From == "" || en.From == ev) && contains(en.In, c.to) {
				c.entry = append(c.entry, en.Do)
			}
		}
	}
	m.check(t)
	m.graph = sync.OnceValue(func() string {
		sm, _ := statelessOf[S, E](t)
		return sm.ToGraph()
	})
	return m
}

// numbering numbers names in order.
func numbering[T ~string](names []string) func(T) int {
	n := make(map[T]int, len(names))
	for i, s := range names {
		n[T(s)] = i
	}
	return func(v T) int {
		if i, ok := n[v]; ok {
			return i
		}
		return -1
	}
}

// size checks that index numbers names distinctly from 0 and returns the
// array size they need.
func size[T ~string](machine string, names []string, index func(T) int) int {
	seen := map[int]bool{}
	n := 0
	for _, s := range names {
		i := index(T(s))
		if i < 0 || seen[i] {
			panic(fmt.Sprintf("fsm %s: %s has no number of its own", machine, s))
		}
		seen[i] = true
		n = max(n, i+1)
	}
	return n
}

func contains[S comparable](ss []S, s S) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// check builds the stateless machine from the Table's rows, fires every
// (state, event) pair on it and panics where it disagrees with the index: an
// event permitted in one and not the other, or another target state.
func (m *Machine[R, S, E, A]) check(t Table) {
	sm, cur := statelessOf[S, E](t)
	errUnhandled := errors.New("unhandled")
	sm.OnUnhandledTrigger(func(context.Context, stateless.State, stateless.Trigger, []string) error { return errUnhandled })
	for _, s := range t.States {
		for _, e := range t.Events() {
			*cur = S(s)
			err := sm.Fire(E(e))
			c := m.cells[m.si(S(s))*m.ne+m.ei(E(e))]
			if (err == nil) != (c.row >= 0) || (err == nil && *cur != c.to) {
				panic(fmt.Sprintf("fsm %s: stateless and the index disagree on (%s, %s)", t.Name, s, e))
			}
		}
	}
}

// statelessOf is the stateless machine of the Table's rows, in its initial
// state, and the variable that holds its state.
func statelessOf[S, E ~string](t Table) (*stateless.StateMachine, *S) {
	cur := new(S)
	*cur = S(t.Initial)
	sm := stateless.NewStateMachineWithExternalStorage(
		func(context.Context) (stateless.State, error) { return *cur, nil },
		func(_ context.Context, s stateless.State) error { *cur = s.(S); return nil },
		stateless.FiringImmediate)
	for _, s := range t.States {
		cfg := sm.Configure(S(s))
		for _, r := range t.Rows {
			switch {
			case r.From != s:
			case r.To == r.From:
				cfg.InternalTransition(E(r.On), noChange)
			default:
				cfg.Permit(E(r.On), S(r.To))
			}
		}
	}
	return sm, cur
}

// noChange is the action of every self-loop in the stateless machine.
func noChange(context.Context, ...any) error { return nil }

// Fire applies ev to r with argument a and returns the index of the applied
// row in the Table's rows. An event without a row in the record's state is the
// Spec's Unhandled error, and the record is unchanged.
func (m *Machine[R, S, E, A]) Fire(r *R, ev E, a A) (int, error) {
	var num *int
	var si int
	if m.number != nil {
		num = m.number(r)
		si = *num
	} else {
		si = m.si(*m.state(r))
	}
	ei := m.ei(ev)
	i := si*m.ne + ei
	if si < 0 || ei < 0 || ei >= m.ne || i >= len(m.cells) || m.cells[i].row < 0 {
		return -1, m.unhandled(*m.state(r), ev)
	}
	c := &m.cells[i]
	if c.self {
		return c.row, nil
	}
	*m.state(r) = c.to
	if num != nil {
		*num = c.toNum
	}
	for _, do := range c.entry {
		do(r, a)
	}
	return c.row, nil
}

// Graph returns the DOT rendering of the machine, drawn by stateless from the
// same rows.
func (m *Machine[R, S, E, A]) Graph() string { return m.graph() }
