package httpapi

import (
	"context"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
)

// noted is an error that carries upstream text for the client, like the
// upstream adapter's gate error.
type noted struct {
	cause error
	note  string
}

func (e noted) Error() string        { return e.cause.Error() }
func (e noted) Unwrap() error        { return e.cause }
func (e noted) UpstreamNote() string { return e.note }

// The gate's answer quotes what the service said, unless it reads like a
// transient failure (agents retry any body that mentions a 5xx number or
// "rate limit"): then only the log has it.
func TestTheGatesNoteIsShownUnlessItReadsAsTransient(t *testing.T) {
	is := is.New(t)
	gate := errs.New(errs.UpstreamLoopApproval)
	body, e, status := public(context.Background(), noted{gate, `The upstream said (counters: {"toolRounds":3}).`})
	is.Equal(status, 400)                                                           // not retried by the agents
	is.Equal(e.Code, errs.UpstreamLoopApproval)                                     // the gate's code
	is.True(strings.HasSuffix(body.Error.Message, `(counters: {"toolRounds":3}).`)) // what the service said
	for _, n := range []string{`(thresholds: {"tokens":500000})`, "(message: rate limit reached)", "(message: try again later)"} {
		body, _, _ = public(context.Background(), noted{gate, n})
		is.True(!strings.Contains(body.Error.Message, n))            // withheld
		is.True(strings.HasSuffix(body.Error.Message, noteWithheld)) // and said where it is
	}
	body, _, _ = public(context.Background(), noted{errs.New(errs.UpstreamFailure), "(message: hi)"})
	is.True(!strings.Contains(body.Error.Message, "hi)")) // only the gate's answer carries upstream text
}
