package fsm_test

import (
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/fsm"
)

type light string

type press string

type bulb struct {
	state   light
	entries []string
}

// wear is the argument of one firing.
type wear struct{ note string }

var errIllegal = errors.New("test: illegal")

func spec() fsm.Spec[bulb, light, press, wear] {
	return fsm.Spec[bulb, light, press, wear]{
		Table: fsm.Table{Name: "lamp", Initial: "OFF", States: []string{"OFF", "ON", "BROKEN"}, Rows: []fsm.Row{
			{ID: "L1", From: "OFF", On: "on", To: "ON"},
			{ID: "L2", From: "ON", On: "off", To: "OFF"},
			{ID: "L3", From: "ON", On: "on", To: "ON"}, // internal: stays, no entry action
			{ID: "L4", From: "OFF", On: "break", To: "BROKEN"},
		}},
		State: func(b *bulb) *light { return &b.state },
		Entry: []fsm.Entry[bulb, light, press, wear]{
			{Do: noteSwitchedOn, From: "on", In: []light{"ON"}},
			{Do: noteOff, In: []light{"OFF"}},
		},
		Unhandled: fsm.Illegal[light, press]("lamp", errIllegal, "not now"),
	}
}

func noteSwitchedOn(b *bulb, w wear) { b.entries = append(b.entries, "on"+w.note) }

func noteOff(b *bulb, w wear) { b.entries = append(b.entries, "off"+w.note) }

func TestAMachineFiresDeclaredRowsAndRunsEntryActions(t *testing.T) {
	is := is.New(t)
	m := fsm.NewMachine(spec())
	b := &bulb{state: "OFF"}
	i, err := m.Fire(b, "on", wear{"!"})
	is.NoErr(err)
	is.Equal(i, 0)                 // the applied row's index
	is.Equal(b.state, light("ON")) // the record's state moved
	i, err = m.Fire(b, "on", wear{})
	is.NoErr(err)
	is.Equal(i, 2)                       // the internal row
	is.Equal(b.entries, []string{"on!"}) // ran no entry action
	_, err = m.Fire(b, "off", wear{})
	is.NoErr(err)
	is.Equal(b.entries, []string{"on!", "off"}) // OnEntry runs after any event, with the firing's argument
}

func TestAnUndeclaredEventIsIllegalAndChangesNothing(t *testing.T) {
	is := is.New(t)
	m := fsm.NewMachine(spec())
	b := &bulb{state: "ON"}
	_, err := m.Fire(b, "break", wear{})
	is.True(errors.Is(err, errIllegal))                      // marked with the spec's error
	is.Equal(err.Error(), "lamp: break not permitted in ON") // names the machine, event and state
	is.Equal(errors.FlattenHints(err), "not now")            // with the spec's hint
	is.Equal(b.state, light("ON"))                           // the record is unchanged
	_, err = m.Fire(b, "unknown", wear{})
	is.True(errors.Is(err, errIllegal))                 // an event no row names is illegal too
	is.True(strings.Contains(m.Graph(), `init -> OFF`)) // stateless draws the graph from Initial
	is.True(strings.Contains(m.Graph(), "OFF -> BROKEN"))
}

func TestASelfLoopDoesNotAllocate(t *testing.T) {
	is := is.New(t)
	m := fsm.NewMachine(spec())
	b := &bulb{state: "ON"}
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := m.Fire(b, "on", wear{}); err != nil {
			t.Fatal(err)
		}
	})
	is.Equal(allocs, 0.0) // answered from the index
}

func TestAStateChangeWithoutEntryActionsDoesNotAllocate(t *testing.T) {
	is := is.New(t)
	s := spec()
	s.Entry = nil
	m := fsm.NewMachine(s)
	b := &bulb{state: "OFF"}
	allocs := testing.AllocsPerRun(1000, func() {
		_, _ = m.Fire(b, "on", wear{})
		_, _ = m.Fire(b, "off", wear{})
	})
	is.Equal(allocs, 0.0)
}

func TestTwoRowsForOnePairPanic(t *testing.T) {
	is := is.New(t)
	s := spec()
	s.Table.Rows = append(s.Table.Rows, fsm.Row{ID: "L5", From: "OFF", On: "on", To: "BROKEN"})
	defer func() { is.True(recover() != nil) }() // a mis-declaration is found at build
	fsm.NewMachine(s)
}

// numbered is a bulb that caches its state's number.
type numbered struct {
	bulb
	num int
}

func TestANumberedMachineKeepsTheRecordsNumberInStep(t *testing.T) {
	is := is.New(t)
	s := spec()
	index := map[light]int{"OFF": 0, "ON": 1, "BROKEN": 2}
	m := fsm.NewMachine(fsm.Spec[numbered, light, press, wear]{
		Table: s.Table,
		State: func(n *numbered) *light { return &n.state },
		StateIndex: func(l light) int {
			if i, ok := index[l]; ok {
				return i
			}
			return -1
		},
		EventIndex: func(p press) int { return map[press]int{"on": 0, "off": 1, "break": 2}[p] },
		Number:     func(n *numbered) *int { return &n.num },
		Unhandled:  s.Unhandled,
	})
	n := &numbered{bulb: bulb{state: "OFF"}}
	_, err := m.Fire(n, "on", wear{})
	is.NoErr(err)
	is.Equal(n.state, light("ON")) // the state moved
	is.Equal(n.num, 1)             // and its number with it
	_, err = m.Fire(n, "off", wear{})
	is.NoErr(err)
	is.Equal(n.num, 0)
	n.num = 2 // BROKEN has no rows: the number is what the machine reads
	_, err = m.Fire(n, "on", wear{})
	is.True(errors.Is(err, errIllegal))
}

func TestTwoStatesOfOneNumberPanic(t *testing.T) {
	is := is.New(t)
	s := spec()
	s.StateIndex = func(light) int { return 0 }
	defer func() { is.True(recover() != nil) }() // a mis-numbering is found at build
	fsm.NewMachine(s)
}
