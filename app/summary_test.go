package app

import (
	"fmt"
	"log/slog"
	"testing"

	crdberrors "github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
)

// The access line writes one group per name, in the order first noted: a
// group noted again replaces the first (strict JSON log pipelines reject a
// duplicate key).
func TestARecordKeepsOneGroupPerName(t *testing.T) {
	is := is.New(t)
	var r record
	r.note("conversation", slog.String("decision", "fresh"))
	r.note("upstream", slog.Int("status", 500))
	r.note("upstream", slog.Int("status", 200)) // replaced, never a second key
	got := r.summary().Notes
	is.Equal(len(got), 2)
	is.Equal(got[0].String(), "conversation=[decision=fresh]")
	is.Equal(got[1].String(), "upstream=[status=200]")
	got[0] = slog.String("x", "y")
	is.Equal(r.Notes[0].Key, "conversation") // a summary is a copy
}

// A refusal carries what the request did before it and changes nothing else
// of the error: its code, its marks, its message and its redacted form.
func TestARefusalCarriesItsSummaryAndIsOtherwiseItsCause(t *testing.T) {
	is := is.New(t)
	cause := crdberrors.Mark(errs.Newf(errs.UpstreamServerError, "status %d from %s", 502, "host.example"), ErrReplayed)
	var r record
	is.Equal(r.refuse(cause), cause) // nothing done: the error itself
	r.Dispatches, r.QueryChars = 1, 7
	r.note("conversation", slog.String("decision", "fresh"))
	err := r.refuse(cause)
	is.Equal(SummaryOf(err).Dispatches, 1)
	is.Equal(SummaryOf(err).QueryChars, int64(7))
	is.Equal(SummaryOf(err).Notes[0].Key, "conversation")
	is.Equal(SummaryOf(cause), Summary{})
	is.Equal(errs.CodeOf(err), errs.UpstreamServerError)
	is.True(crdberrors.Is(err, ErrReplayed))
	is.Equal(err.Error(), cause.Error())
	is.Equal(errs.Redact(err), errs.Redact(cause))
	is.Equal(fmt.Sprint(err), fmt.Sprint(cause))
}
