package httpapi

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/cockroachdb/redact"

	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// randText is a random completion id suffix (26 base32 characters).
func randText() string { return rand.Text() }

// step is one piece of client-visible output: text, a tool-call fragment, or
// both. first marks the first fragment of a call (the one with id and name).
type step struct {
	text  string
	call  *app.ToolCallDelta
	first bool
}

// turnReader reads a turn and enforces the app.Turn contract, so that the
// renderers can never show an unproven finish: a finish is reported only
// after the turn's io.EOF, tool-call indexes are dense (0, 1, …) with id and
// name on each call's first fragment, and the finish agrees with the calls
// (tool_calls when any call was emitted, stop otherwise). A violation is an
// internal error.
type turnReader struct {
	turn  app.Turn
	calls int
	// outBytes counts the output received: text, tool names and arguments
	// (the output side of a usage estimate).
	outBytes int
	finish   app.FinishReason
	usage    *chat.Usage
	onFirst  func() // called once, at the first text or tool-call delta; may be nil
	// wait, when set, writes what the renderer holds: it is called before
	// the turn waits for the upstream (app.TryTurn), so that what arrived
	// in one upstream read goes in one write and nothing waits with it.
	wait func()
}

// read returns the turn's next delta, calling tr.wait first when the turn
// would wait for it.
func (tr *turnReader) read(ctx context.Context) (app.Delta, error) {
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

// next returns the next step, or io.EOF once the turn ended with a proven
// finish (then tr.finish and tr.usage are set).
func (tr *turnReader) next(ctx context.Context) (step, error) {
	for {
		d, err := tr.read(ctx)
		if errors.Is(err, io.EOF) {
			switch {
			case tr.finish == "":
				return step{}, errors.AssertionFailedf("httpapi: turn ended without a finish")
			case (tr.finish == app.FinishToolCalls) != (tr.calls > 0):
				return step{}, errors.AssertionFailedf("httpapi: finish %s disagrees with %d tool calls", redact.Safe(string(tr.finish)), redact.Safe(tr.calls))
			}
			return step{}, io.EOF
		}
		if err != nil {
			return step{}, err
		}
		if tr.finish != "" {
			return step{}, errors.AssertionFailedf("httpapi: delta after the finish")
		}
		st := step{text: d.Text}
		if c := d.ToolCall; c != nil {
			switch {
			case c.Index == tr.calls && c.ID != "" && c.Name != "":
				tr.calls++
				st.first = true
			case c.Index >= 0 && c.Index < tr.calls:
			default:
				return step{}, errors.AssertionFailedf("httpapi: tool call delta out of order")
			}
			st.call = c
			tr.outBytes += len(c.Name) + len(c.Arguments)
		}
		tr.outBytes += len(d.Text)
		if d.Finish != "" {
			if d.Finish != app.FinishStop && d.Finish != app.FinishToolCalls {
				return step{}, errors.AssertionFailedf("httpapi: unknown finish reason")
			}
			tr.finish = d.Finish
			if d.Usage != nil && d.Usage.Reported() {
				tr.usage = d.Usage
			}
		}
		if st.text != "" || st.call != nil {
			if tr.onFirst != nil {
				tr.onFirst()
				tr.onFirst = nil
			}
			return st, nil
		}
	}
}

// complete renders a whole turn as one chat.completion. Every delta is read
// until io.EOF first: any error before that is answered as an error, with no
// partial content.
//
// content is the concatenated text; it is null only when the turn produced
// tool calls and no text. usage holds the upstream's token counts and is
// null when the upstream reported none: the gateway never invents counts.
// collected is a whole turn read to its proven end: the text and each tool
// call (id, name, argument string), in order.
type collected struct {
	text  string
	calls []app.ToolCallDelta // ID, Name and the whole Arguments of each call
}

// collect reads a turn to its proven end; any failure before it is returned
// as it is, and nothing may be shown.
func collect(ctx context.Context, tr *turnReader) (collected, error) {
	var text strings.Builder
	var calls []app.ToolCallDelta
	var args []*strings.Builder
	for {
		st, err := tr.next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return collected{}, err
		}
		text.WriteString(st.text)
		if c := st.call; c != nil {
			if st.first {
				calls = append(calls, app.ToolCallDelta{Index: c.Index, ID: c.ID, Name: c.Name})
				args = append(args, new(strings.Builder))
			}
			args[c.Index].WriteString(c.Arguments)
		}
	}
	for i := range calls {
		calls[i].Arguments = args[i].String()
	}
	return collected{text: text.String(), calls: calls}, nil
}

// streamed is one API's rendering of a turn as its event stream, through
// that grammar's emitter; driveStream reads the turn and calls it. ctx is
// the turn's.
type streamed interface {
	opened() bool
	// open sends the headers and the opening events, with the first delta.
	open() error
	// step shows one step of the turn.
	step(st step) error
	// finish ends the stream after the turn's proven end (opening it first
	// when no delta came); an error while not opened is a plain answer.
	finish(ctx context.Context, tr *turnReader) error
	// fail ends an opened stream with the grammar's failure event for err.
	fail(ctx context.Context, err error) error
	// flush writes what the emitter holds (the turn is about to wait).
	flush() error
}

// driveStream renders a turn through g. The headers wait for the first
// delta, so a failure before any output is returned, nothing written, and
// the route's adapter answers it with its status, in the API's shape; after
// them a failure, the turn's or an emitter's refusal of an
// ungrammatical event (an internal error), is the grammar's failure event
// and the end, and a failed write (the client gone) ends the stream there.
// What the emitter holds is written when the turn is about to wait
// (turnReader.wait), so what arrived in one upstream read goes in one
// write.
func (s *server) driveStream(r *http.Request, tr *turnReader, g streamed) error {
	ctx := r.Context()
	tr.wait = func() { _ = g.flush() }
	var err error
	for err == nil {
		var st step
		if st, err = tr.next(ctx); err == nil && !g.opened() {
			err = g.open()
		}
		if err == nil {
			err = g.step(st)
		}
	}
	if err == io.EOF {
		if err = g.finish(ctx, tr); err == nil {
			return nil
		}
	}
	switch {
	case errors.Is(err, sse.ErrWrite):
	case !g.opened():
		return err // nothing was written: the route's adapter answers it
	default:
		if err = g.fail(ctx, err); err == nil {
			return nil
		}
	}
	infoFrom(ctx).code = errs.ClientCancelled
	return nil
}
