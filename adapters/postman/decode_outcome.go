package postman

import (
	"io"

	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
)

// This file is where every upstream event meets the completion machine: the
// decoder classifies each line and each read into a completion.Event
// (decode_*.go, stream.go) and fires it here through fire, the one call that
// reaches Tracker.Fire; settle turns the tracker's terminal outcome into the
// stream's final error.

// fire applies one event to the decoder's tracker and, when a summary is
// wanted, records the evidence and feeds the shadow trackers.
func (d *decoder) fire(e completion.Event, code errs.Code) (string, error) {
	if ev := d.ev; ev != nil {
		switch e {
		case completion.Output:
			ev.output, ev.usageAfter = true, false
		case completion.Usage:
			ev.usageAfter = ev.usageAfter || ev.output
			ev.usageBefore = ev.usageBefore || !ev.output
		case completion.Done:
			ev.doneMarker = true
		case completion.DoneEvent:
			ev.doneEvent = true
		case completion.EOF:
			ev.wholeFrames = true
		}
		for _, sh := range ev.shadows {
			if !sh.State().Terminal() {
				_, _ = sh.Fire(e, code)
			}
		}
	}
	id, err := d.tr.Fire(e, code)
	if err == nil && d.ev != nil && d.tr.State().Terminal() && d.ev.row == "" {
		d.ev.row = id
	}
	return id, err
}

// abort records an outcome decided outside the body (client gone, timeout) if
// none is known yet, and returns the final error.
func (d *decoder) abort(e completion.Event) error {
	if d.final == nil {
		d.apply(d.fire(e, ""))
	}
	d.q, d.qh = d.q[:0], 0
	return d.final
}

// endOfBody handles a clean read of the body's end: the tool calls must be
// whole (every call named, empty arguments become {}) before EOF may complete.
func (d *decoder) endOfBody() {
	partial := d.split.Partial()
	if !partial && d.finishCalls() != nil {
		return
	}
	if partial {
		d.apply(d.fire(completion.EOFPartial, ""))
		return
	}
	d.apply(d.fire(completion.EOF, ""))
}

// apply takes a tracker result and settles the outcome when it is terminal.
func (d *decoder) apply(_ string, err error) {
	if err != nil {
		d.internal(err)
		return
	}
	d.settle()
}

// settle sets final once the tracker reached an outcome and reports whether it did.
func (d *decoder) settle() bool {
	if d.final != nil {
		return true
	}
	if !d.tr.State().Terminal() {
		return false
	}
	o := d.tr.Outcome()
	switch {
	case o.Complete:
		d.final = io.EOF
	case o.State == completion.LoopApprovalGated:
		d.final = d.gateError(errs.Newf(o.Code, "outcome %s after %d data lines", o.State, safeInt(d.lines)))
	case o.Code == errs.UpstreamQuotaExhausted && d.cycleEnd != "":
		d.final = &cycleEndError{cause: errs.Newf(o.Code, "outcome %s after %d data lines", o.State, safeInt(d.lines)), end: d.cycleEnd}
	default:
		d.final = errs.Newf(o.Code, "outcome %s after %d data lines", o.State, safeInt(d.lines))
	}
	if d.cfg.onFinal != nil {
		d.cfg.onFinal()
	}
	return true
}

func (d *decoder) internal(err error) {
	if d.final != nil {
		return
	}
	d.final = errs.Wrap(err, errs.InternalError)
	if d.cfg.onFinal != nil {
		d.cfg.onFinal()
	}
}

// fail records a failure with code and returns errStop.
func (d *decoder) fail(code errs.Code) error {
	d.apply(d.fire(completion.Failure, code))
	return errStop
}

// step applies a tracker result for an event and reports whether decoding may go
// on (false once an outcome is known).
func (d *decoder) step(_ string, err error) bool {
	if err != nil {
		d.internal(err)
		return false
	}
	return !d.settle()
}
