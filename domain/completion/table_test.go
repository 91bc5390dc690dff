package completion_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
)

func TestTablesAreValidAndNamed(t *testing.T) {
	for _, rule := range allRules {
		t.Run(string(rule), func(t *testing.T) {
			is := is.New(t)
			tab := completion.Table(rule)
			is.NoErr(tab.Validate())                           // unique ids, one row per pair, declared states
			is.Equal(tab.Name, "completion-"+string(rule))     // the spec file stem
			is.Equal(tab.Initial, string(completion.Awaiting)) // every stream starts awaiting
			is.True(len(tab.Notes) > 0)                        // the rule is explained
			id := regexp.MustCompile(`^K[0-9]{2}$`)
			for _, r := range tab.Rows {
				is.True(id.MatchString(r.ID)) // stable ids K01…
				is.True(r.Result != "")       // every row names its result
				is.True(r.Ref != "")          // and where it comes from
				if slices.Contains(tab.Terminal, r.To) && r.Result != "completion" {
					is.True(r.Result[:6] == "error:") // non-completion outcomes name their code
				}
			}
		})
	}
}

func TestEveryNonTerminalPairIsDeclaredExactlyOnce(t *testing.T) {
	for _, rule := range allRules {
		t.Run(string(rule), func(t *testing.T) {
			is := is.NewRelaxed(t)
			tab := completion.Table(rule)
			count := map[[2]string]int{}
			for _, r := range tab.Rows {
				count[[2]string{r.From, r.On}]++
			}
			for _, s := range nonTerminalStates {
				for _, e := range allEvents {
					is.Equal(count[[2]string{string(s), string(e)}], 1) // no gap and no duplicate for (state, event)
				}
			}
			for _, s := range terminalStates {
				for _, e := range allEvents {
					is.Equal(count[[2]string{string(s), string(e)}], 0) // terminal states have no rows: they absorb
				}
			}
			is.Equal(len(tab.Rows), len(nonTerminalStates)*len(allEvents)) // nothing else is declared
		})
	}
}

// TestTransitionsMatchHandWrittenModel checks every (rule, state, event) triple
// against the model, from every state the rule can reach.
func TestTransitionsMatchHandWrittenModel(t *testing.T) {
	for _, rule := range allRules {
		tab := completion.Table(rule)
		for _, s := range allStates {
			if !slices.Contains(tab.States, string(s)) {
				continue // the rule never reaches s
			}
			for _, e := range allEvents {
				t.Run(string(rule)+"/"+string(s)+"/"+string(e), func(t *testing.T) {
					is := is.New(t)
					tr := completion.NewTracker(rule)
					completion.SetState(tr, s)
					before := tr.Outcome()
					m := modelIn(rule, s)
					legal := m.step(e, errs.UpstreamModelMismatch)
					id, err := apply(t, tr, e, errs.UpstreamModelMismatch)
					if !legal {
						is.True(errors.Is(err, completion.ErrEventAfterOutcome)) // the model forbids it: a marked error
						is.Equal(id, "")                                         // no row applied
						is.Equal(tr.Outcome(), before)                           // and nothing changed
						return
					}
					is.NoErr(err)                       // the model allows it
					is.Equal(tr.State(), m.state())     // and the tracker lands where the model does
					is.Equal(tr.Outcome(), m.outcome()) // with the model's outcome and code
					row, ok := tab.RowFor(string(s), string(e))
					is.True(ok)                          // the applied row is declared
					is.Equal(row.ID, id)                 // and is the one reported
					is.Equal(row.To, string(tr.State())) // and names the state reached
				})
			}
		}
	}
}

func TestGraphMatchesGolden(t *testing.T) {
	for _, rule := range allRules {
		t.Run(string(rule), func(t *testing.T) {
			is := is.New(t)
			got := completion.Graph(rule)
			is.Equal(got, completion.Graph(rule)) // the graph is deterministic
			want, err := os.ReadFile(filepath.Join("..", "..", "spec", "completion-"+string(rule)+".dot"))
			is.NoErr(err)               // the one copy exists (`make spec` writes it)
			is.Equal(got, string(want)) // the machine matches its golden graph
		})
	}
}
