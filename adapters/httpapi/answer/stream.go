package answer

import (
	"context"
	"io"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/domain/errs"
)

// Stream is one API's rendering of a turn as its event stream, through that
// grammar's emitter; Drive reads the turn and calls it. ctx is the turn's.
type Stream interface {
	Opened() bool
	// Open sends the headers and the opening events, with the first delta.
	Open() error
	// Step shows one step of the turn.
	Step(st Step) error
	// Finish ends the stream after the turn's proven end (opening it first
	// when no delta came); an error while not opened is a plain answer.
	Finish(ctx context.Context, tr *Reader) error
	// Fail ends an opened stream with the grammar's failure event for err.
	Fail(ctx context.Context, err error) error
	// Flush writes what the emitter holds (the turn is about to wait).
	Flush() error
}

// Drive renders a turn through g. The headers wait for the first delta, so
// a failure before any output is returned, nothing written, and the route's
// adapter answers it with its status, in the API's shape; after them a
// failure, the turn's or an emitter's refusal of an ungrammatical event (an
// internal error), is the grammar's failure event and the end, and is
// returned too: the route's adapter notes it for the access line and the
// ledger and does not write it again. A failed write (the client gone) ends
// the stream there and is returned as client_cancelled. What the emitter
// holds is written when the turn is about to wait, so what arrived in one
// upstream read goes in one write.
func Drive(ctx context.Context, tr *Reader, g Stream) error {
	tr.wait = func() { _ = g.Flush() }
	var err error
	for err == nil {
		var st Step
		if st, err = tr.Next(ctx); err == nil && !g.Opened() {
			err = g.Open()
		}
		if err == nil {
			err = g.Step(st)
		}
	}
	if err == io.EOF {
		if err = g.Finish(ctx, tr); err == nil {
			return nil
		}
	}
	switch {
	case errors.Is(err, sse.ErrWrite):
	case !g.Opened():
		return err // nothing was written: the route's adapter answers it
	default:
		if g.Fail(ctx, err) == nil {
			return err // written in the stream: the adapter only notes it
		}
	}
	return errs.New(errs.ClientCancelled)
}
