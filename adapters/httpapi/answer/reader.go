package answer

import (
	"context"
	"crypto/rand"
	"io"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/redact"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
)

// RandText is a random id suffix (26 base32 characters) for the ids an
// answer names (completions, messages, responses, output items).
func RandText() string { return rand.Text() }

// Step is one piece of client-visible output: text, a tool-call fragment, or
// both. First marks the first fragment of a call (the one with id and name).
type Step struct {
	Text  string
	Call  *app.ToolCallDelta
	First bool
}

// Reader reads a turn and enforces the app.Turn contract, so that the
// answers can never show an unproven finish: a finish is reported only
// after the turn's io.EOF, tool-call indexes are dense (0, 1, …) with id and
// name on each call's first fragment, and the finish agrees with the calls
// (tool_calls when any call was emitted, stop otherwise). A violation is an
// internal error.
//
// What the answer showed comes back on it for the transport's access line
// and ledger: the tool calls (Calls) and how the usage shown was obtained
// (Shown).
type Reader struct {
	turn app.Turn
	now  func() time.Time // the clock of First; nil: First stays zero
	// wait, when set, writes what the answer holds: it is called before the
	// turn waits for the upstream (app.TryTurn), so that what arrived in one
	// upstream read goes in one write and nothing waits with it.
	wait func()

	// First is when the first text or tool-call delta was read (zero: none).
	First time.Time
	// Calls counts the tool calls shown.
	Calls int
	// OutBytes counts the output received: text, tool names and arguments
	// (the output side of a usage estimate).
	OutBytes int
	// Finish and Reported are the turn's proven end and the upstream's
	// counts (nil: none), set once Next returned io.EOF.
	Finish   app.FinishReason
	Reported *chat.Usage
	// Shown is how the usage shown was obtained (UsageHeader's values:
	// "reported", "estimated", "unreported"); "" while none was shown.
	Shown string
}

// NewReader reads turn; now (may be nil) times its first text or tool-call
// delta (First).
func NewReader(turn app.Turn, now func() time.Time) *Reader {
	return &Reader{turn: turn, now: now}
}

// read returns the turn's next delta, calling tr.wait first when the turn
// would wait for it.
func (tr *Reader) read(ctx context.Context) (app.Delta, error) {
	if tr.wait != nil {
		if t, ok := tr.turn.(app.TryTurn); ok {
			if d, ok, err := t.TryNext(ctx); ok {
				return d, err
			}
			tr.wait()
		}
	}
	return tr.turn.Next(ctx)
}

// Next returns the next step, or io.EOF once the turn ended with a proven
// finish (then Finish and Reported are set).
func (tr *Reader) Next(ctx context.Context) (Step, error) {
	for {
		d, err := tr.read(ctx)
		if errors.Is(err, io.EOF) {
			switch {
			case tr.Finish == "":
				return Step{}, errors.AssertionFailedf("httpapi: turn ended without a finish")
			case (tr.Finish == app.FinishToolCalls) != (tr.Calls > 0):
				return Step{}, errors.AssertionFailedf("httpapi: finish %s disagrees with %d tool calls", redact.Safe(string(tr.Finish)), redact.Safe(tr.Calls))
			}
			return Step{}, io.EOF
		}
		if err != nil {
			return Step{}, err
		}
		if tr.Finish != "" {
			return Step{}, errors.AssertionFailedf("httpapi: delta after the finish")
		}
		st := Step{Text: d.Text}
		if c := d.ToolCall; c != nil {
			switch {
			case c.Index == tr.Calls && c.ID != "" && c.Name != "":
				tr.Calls++
				st.First = true
			case c.Index >= 0 && c.Index < tr.Calls:
			default:
				return Step{}, errors.AssertionFailedf("httpapi: tool call delta out of order")
			}
			st.Call = c
			tr.OutBytes += len(c.Name) + len(c.Arguments)
		}
		tr.OutBytes += len(d.Text)
		if d.Finish != "" {
			if d.Finish != app.FinishStop && d.Finish != app.FinishToolCalls {
				return Step{}, errors.AssertionFailedf("httpapi: unknown finish reason")
			}
			tr.Finish = d.Finish
			if d.Usage != nil && d.Usage.Reported() {
				tr.Reported = d.Usage
			}
		}
		if st.Text != "" || st.Call != nil {
			if tr.now != nil && tr.First.IsZero() {
				tr.First = tr.now()
			}
			return st, nil
		}
	}
}

// Collected is a whole turn read to its proven end: the text and each tool
// call (id, name, argument string), in order.
type Collected struct {
	Text  string
	Calls []app.ToolCallDelta // ID, Name and the whole Arguments of each call
}

// Collect reads a turn to its proven end for a JSON answer; any failure
// before it is returned as it is, and nothing may be shown.
func Collect(ctx context.Context, tr *Reader) (Collected, error) {
	var text strings.Builder
	var calls []app.ToolCallDelta
	var args []*strings.Builder
	for {
		st, err := tr.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return Collected{}, err
		}
		text.WriteString(st.Text)
		if c := st.Call; c != nil {
			if st.First {
				calls = append(calls, app.ToolCallDelta{Index: c.Index, ID: c.ID, Name: c.Name})
				args = append(args, new(strings.Builder))
			}
			args[c.Index].WriteString(c.Arguments)
		}
	}
	for i := range calls {
		calls[i].Arguments = args[i].String()
	}
	return Collected{Text: text.String(), Calls: calls}, nil
}
