package fsm_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/fsm"
)

func table() fsm.Table {
	return fsm.Table{Name: "t", Title: "T", Initial: "A", States: []string{"A", "B"}, Terminal: []string{"B"},
		Rows: []fsm.Row{{ID: "R1", From: "A", On: "go", To: "B", Result: "x|y"}}}
}

func TestValidateCatchesDeclarationMistakes(t *testing.T) {
	is := is.New(t)
	is.NoErr(table().Validate()) // a well-formed table passes
	dup := table()
	dup.Rows = append(dup.Rows, fsm.Row{ID: "R1", From: "B", On: "go", To: "A"})
	is.True(dup.Validate() != nil) // duplicate ids are refused
	pair := table()
	pair.Rows = append(pair.Rows, fsm.Row{ID: "R2", From: "A", On: "go", To: "A"})
	is.True(pair.Validate() != nil) // two rows for one (state, event) are refused
	undeclared := table()
	undeclared.Rows[0].To = "C"
	is.True(undeclared.Validate() != nil) // undeclared states are refused
}

func TestRenderingsListEveryRow(t *testing.T) {
	is := is.New(t)
	tb := table()
	is.True(strings.Contains(tb.Mermaid(), "A --> B: go")) // Mermaid edge per row
	is.True(strings.Contains(tb.Mermaid(), "[*] --> A"))   // initial arrow
	is.True(strings.Contains(tb.Markdown(), `x\|y`))       // pipes escaped in cells
	r, ok := tb.RowFor("A", "go")
	is.True(ok)          // rows are found by (state, event)
	is.Equal(r.ID, "R1") // the right one
}
