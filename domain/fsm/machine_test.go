package fsm_test

import (
	"context"
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

type firing struct{ b *bulb }

var errIllegal = errors.New("test: illegal")

func spec() fsm.Spec[firing, light, press] {
	return fsm.Spec[firing, light, press]{
		Table: fsm.Table{Name: "lamp", Initial: "OFF", States: []string{"OFF", "ON", "BROKEN"}, Rows: []fsm.Row{
			{ID: "L1", From: "OFF", On: "on", To: "ON"},
			{ID: "L2", From: "ON", On: "off", To: "OFF"},
			{ID: "L3", From: "ON", On: "on", To: "ON"}, // internal: stays, no entry action
			{ID: "L4", From: "OFF", On: "break", To: "BROKEN"},
		}},
		State: func(f *firing) *light { return &f.b.state },
		Entry: []fsm.Entry[light, press]{
			{Do: noteSwitchedOn, From: "on", In: []light{"ON"}},
			{Do: noteOff, In: []light{"OFF"}},
		},
		Illegal: errIllegal, Hint: "not now",
	}
}

func noteSwitchedOn(_ context.Context, args ...any) error {
	f := args[0].(*firing)
	f.b.entries = append(f.b.entries, "on")
	return nil
}

func noteOff(_ context.Context, args ...any) error {
	f := args[0].(*firing)
	f.b.entries = append(f.b.entries, "off")
	return nil
}

func TestAMachineFiresDeclaredRowsAndRunsEntryActions(t *testing.T) {
	is := is.New(t)
	m := fsm.NewMachine(spec())
	b := &bulb{state: "OFF"}
	i, err := m.Fire(&firing{b}, "on")
	is.NoErr(err)
	is.Equal(i, 0)                 // the applied row's index
	is.Equal(b.state, light("ON")) // the record's state moved
	i, err = m.Fire(&firing{b}, "on")
	is.NoErr(err)
	is.Equal(i, 2)                      // the internal row
	is.Equal(b.entries, []string{"on"}) // ran no entry action
	_, err = m.Fire(&firing{b}, "off")
	is.NoErr(err)
	is.Equal(b.entries, []string{"on", "off"}) // OnEntry runs after any event
}

func TestAnUndeclaredEventIsIllegalAndChangesNothing(t *testing.T) {
	is := is.New(t)
	m := fsm.NewMachine(spec())
	b := &bulb{state: "ON"}
	_, err := m.Fire(&firing{b}, "break")
	is.True(errors.Is(err, errIllegal))                         // marked with the spec's error
	is.Equal(err.Error(), "lamp: break not permitted in ON")    // names the machine, event and state
	is.Equal(errors.FlattenHints(err), "not now")               // with the spec's hint
	is.Equal(b.state, light("ON"))                              // the record is unchanged
	is.True(strings.Contains(m.Graph(), `init -> OFF`))         // the graph starts at Initial
	is.True(strings.Contains(m.Graph(), "on / noteSwitchedOn")) // and names entry actions
}

func TestTwoRowsForOnePairPanic(t *testing.T) {
	is := is.New(t)
	s := spec()
	s.Table.Rows = append(s.Table.Rows, fsm.Row{ID: "L5", From: "OFF", On: "on", To: "BROKEN"})
	defer func() { is.True(recover() != nil) }() // a mis-declaration is found at build
	fsm.NewMachine(s)
}
