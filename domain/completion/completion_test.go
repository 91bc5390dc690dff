package completion_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
)

const (
	legacy   = completion.RuleLegacyDone
	explicit = completion.RuleExplicitOnly
	usage    = completion.RuleUsageAfterOutput

	meta  = completion.Metadata
	out   = completion.Output
	use   = completion.Usage
	fail  = completion.Failure
	done  = completion.Done
	eof   = completion.EOF
	eofP  = completion.EOFPartial
	abort = completion.Abort
	tmo   = completion.Timeout
	rerr  = completion.ReadError
)

func TestParseRuleAcceptsExactlyTheThreeRules(t *testing.T) {
	is := is.New(t)
	for _, r := range allRules {
		got, err := completion.ParseRule(string(r))
		is.NoErr(err)    // every declared rule parses
		is.Equal(got, r) // to itself
	}
	for _, bad := range []string{"", "EXPLICIT_ONLY", "usage_after_output", "legacy"} {
		_, err := completion.ParseRule(bad)
		is.True(errs.Has(err, errs.ConfigInvalid)) // anything else is config_invalid
	}
	is.Equal(completion.DefaultWebRule, usage)              // the contract's default
	is.True(usage.Web() && explicit.Web() && !legacy.Web()) // only the web rules are web rules
}

// Legacy rule (access_token).

func TestLegacyExactDoneThenEOFCompletes(t *testing.T) {
	is := is.New(t)
	tr := run(t, legacy, meta, out, done, eof)
	is.Equal(tr.Outcome(), completion.Outcome{State: completion.CompleteExplicit, Complete: true}) // exact [DONE] completes
}

// A stream of metadata only (conversation, usage) that ends cleanly with
// [DONE] carried no answer: every rule refuses it as upstream_empty_stream at
// the marker, as a done event before any output already was on web_session. ps2Api saw
// such streams (usage + streamingFormat + conversation, or usage alone, then
// a clean end; 529 doc §3.1, stream.go streamInternal, measured 2026-08-27).
func TestADoneMarkerAfterMetadataOnlyIsAnEmptyStreamOnEveryRule(t *testing.T) {
	for _, rule := range []completion.Rule{legacy, explicit, usage} {
		for name, evs := range map[string][]completion.Event{
			"done only": {done}, "conversation": {meta, done}, "conversation and usage": {meta, use, done},
		} {
			t.Run(string(rule)+"/"+name, func(t *testing.T) {
				is := is.New(t)
				o := run(t, rule, evs...).Outcome()
				is.True(!o.Complete)                                                                               // never a completion
				is.Equal(o, completion.Outcome{State: completion.IncompleteEmpty, Code: errs.UpstreamEmptyStream}) // the same refusal as EOF or a done event
			})
		}
	}
}

func TestLegacyEOFBeforeDoneIsIncompleteStream(t *testing.T) {
	for name, evs := range map[string][]completion.Event{
		"empty": {eof}, "metadata": {meta, eof}, "output": {out, eof}, "output and usage": {out, use, eof},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			o := run(t, legacy, evs...).Outcome()
			is.Equal(o.State, completion.IncompleteTruncated) // EOF first is truncation
			is.Equal(o.Code, errs.UpstreamIncompleteStream)   // with the legacy code
			is.True(!o.Complete)                              // and no completion
		})
	}
}

func TestLegacyDataAfterDoneIsAnError(t *testing.T) {
	for _, e := range []completion.Event{meta, out, use, fail, done, eofP} {
		t.Run(string(e), func(t *testing.T) {
			is := is.New(t)
			tr := run(t, legacy, out, done, e)
			is.Equal(tr.Outcome(), completion.Outcome{State: completion.Failed, Code: errs.UpstreamDataAfterDone}) // anything after [DONE] but a clean EOF
		})
	}
}

// The terminal rules of docs/COMPLETION.md, one by one, for the web rules.

func TestRule1FailureAtAnyPointFailsWithItsCode(t *testing.T) {
	for _, rule := range allRules {
		for _, prefix := range [][]completion.Event{{}, {meta}, {out}, {out, use}} {
			t.Run(string(rule), func(t *testing.T) {
				is := is.New(t)
				tr := run(t, rule, prefix...)
				_, err := apply(t, tr, fail, errs.UpstreamQuotaExhausted)
				is.NoErr(err)                                                                                           // a failure is always accepted before [DONE]
				is.Equal(tr.Outcome(), completion.Outcome{State: completion.Failed, Code: errs.UpstreamQuotaExhausted}) // with the code it carries
				_, err = tr.Fire(eof, "")
				is.True(errors.Is(err, completion.ErrEventAfterOutcome)) // nothing can complete it afterwards
			})
		}
	}
}

func TestRule2ExactDoneCompletesOnlyWithoutAPartialFrame(t *testing.T) {
	for _, rule := range []completion.Rule{explicit, usage} {
		t.Run(string(rule), func(t *testing.T) {
			is := is.New(t)
			is.Equal(run(t, rule, out, done, eof).Outcome().State, completion.CompleteExplicit) // [DONE] then a clean EOF completes
			o := run(t, rule, out, done, eofP).Outcome()
			is.Equal(o.State, completion.Failed)         // a partial frame after [DONE] does not
			is.Equal(o.Code, errs.UpstreamDataAfterDone) // it is data after the end marker
		})
	}
}

func TestRule3NoNativeTerminalEventIsDeclared(t *testing.T) {
	is := is.New(t)
	for _, rule := range allRules {
		for _, r := range completion.Table(rule).Rows {
			if r.To == string(completion.CompleteExplicit) {
				is.Equal([2]string{r.From, r.On}, [2]string{string(completion.DoneSeen), string(eof)}) // explicit completion only from [DONE] + EOF
			}
			if r.To == string(completion.DoneSeen) && r.On != string(done) {
				// The one native terminal event: a done event, on web_session, after output.
				is.True(rule.Web())
				is.Equal(r.On, string(completion.DoneEvent))
				is.True(r.From == string(completion.OutputSeen) || r.From == string(completion.OutputUsage))
			}
		}
	}
}

// A {"eventType":"done"} event after output is an explicit end on every
// web_session rule (also without usage), a known event that ends nothing on
// access_token, and never a completion before output or when data follows it.
func TestDoneEventIsAnExplicitEndOnWebSessionOnly(t *testing.T) {
	dev := completion.DoneEvent
	for _, c := range []struct {
		rule completion.Rule
		evs  []completion.Event
		want completion.Outcome
	}{
		{explicit, []completion.Event{meta, out, dev, eof}, completion.Outcome{State: completion.CompleteExplicit, Complete: true}},
		{usage, []completion.Event{meta, out, dev, eof}, completion.Outcome{State: completion.CompleteExplicit, Complete: true}},
		{usage, []completion.Event{out, use, dev, eof}, completion.Outcome{State: completion.CompleteExplicit, Complete: true}},
		{explicit, []completion.Event{meta, dev}, completion.Outcome{State: completion.IncompleteEmpty, Code: errs.UpstreamEmptyStream}},
		{usage, []completion.Event{dev}, completion.Outcome{State: completion.IncompleteEmpty, Code: errs.UpstreamEmptyStream}},
		{usage, []completion.Event{out, dev, use}, completion.Outcome{State: completion.Failed, Code: errs.UpstreamDataAfterDone}},
		{explicit, []completion.Event{out, dev, done}, completion.Outcome{State: completion.Failed, Code: errs.UpstreamDataAfterDone}},
		{usage, []completion.Event{out, dev, eofP}, completion.Outcome{State: completion.Failed, Code: errs.UpstreamDataAfterDone}},
		{legacy, []completion.Event{out, dev, eof}, completion.Outcome{State: completion.IncompleteTruncated, Code: errs.UpstreamIncompleteStream}},
		{legacy, []completion.Event{dev, out, use, dev, done, eof}, completion.Outcome{State: completion.CompleteExplicit, Complete: true}},
		{legacy, []completion.Event{out, done, dev}, completion.Outcome{State: completion.Failed, Code: errs.UpstreamDataAfterDone}},
	} {
		t.Run(string(c.rule), func(t *testing.T) {
			is := is.New(t)
			is.Equal(run(t, c.rule, c.evs...).Outcome(), c.want) // the done event's outcome
		})
	}
}

func TestRule4EOFWithAPartialFrameIsTruncated(t *testing.T) {
	for _, rule := range allRules {
		for _, prefix := range [][]completion.Event{{}, {meta}, {out}, {out, use}} {
			t.Run(string(rule), func(t *testing.T) {
				is := is.New(t)
				o := run(t, rule, append(prefix, eofP)...).Outcome()
				is.Equal(o, completion.Outcome{State: completion.IncompleteTruncated, Code: errs.UpstreamIncompleteStream}) // a partial frame never completes
			})
		}
	}
}

func TestRule5EOFAfterOutputWithoutProofIsAmbiguous(t *testing.T) {
	for _, c := range []struct {
		rule completion.Rule
		evs  []completion.Event
	}{
		{explicit, []completion.Event{meta, out, eof}},
		{explicit, []completion.Event{out, use, eof}}, // usage is no proof under explicit_only
		{usage, []completion.Event{out, eof}},
		{usage, []completion.Event{use, out, eof}},      // usage before output is no proof
		{usage, []completion.Event{out, use, out, eof}}, // new output needs a new usage
		{usage, []completion.Event{out, use, out, meta, eof}},
	} {
		t.Run(string(c.rule), func(t *testing.T) {
			is := is.New(t)
			o := run(t, c.rule, c.evs...).Outcome()
			is.Equal(o, completion.Outcome{State: completion.AmbiguousEOF, Code: errs.UpstreamCompletionAmbiguous}) // fail closed
		})
	}
}

func TestRule6EOFWithoutOutputIsEmpty(t *testing.T) {
	for _, rule := range []completion.Rule{explicit, usage} {
		for _, prefix := range [][]completion.Event{{}, {meta}, {meta, use, meta}} {
			t.Run(string(rule), func(t *testing.T) {
				is := is.New(t)
				o := run(t, rule, append(prefix, eof)...).Outcome()
				is.Equal(o, completion.Outcome{State: completion.IncompleteEmpty, Code: errs.UpstreamEmptyStream}) // metadata and heartbeats are not output
			})
		}
	}
}

func TestRule7AbortTimeoutAndReadErrorNeverComplete(t *testing.T) {
	want := map[completion.Event]completion.Outcome{
		abort: {State: completion.Aborted, Code: errs.ClientCancelled},
		tmo:   {State: completion.TimedOut, Code: errs.UpstreamTimeout},
		rerr:  {State: completion.Failed, Code: errs.UpstreamConnectionLost},
	}
	for _, rule := range allRules {
		for e, o := range want {
			for _, prefix := range [][]completion.Event{{}, {out, use}, {out, done}} {
				t.Run(string(rule)+"/"+string(e), func(t *testing.T) {
					is := is.New(t)
					is.Equal(run(t, rule, append(prefix, e)...).Outcome(), o) // the existing classification, even after [DONE]
				})
			}
		}
	}
}

// The two web rules side by side.

func TestUsageAfterOutputCompletesOnCleanEOF(t *testing.T) {
	is := is.New(t)
	o := run(t, usage, meta, out, out, meta, use, meta, eof).Outcome()
	is.Equal(o, completion.Outcome{State: completion.CompleteUsageAfterOutput, Complete: true}) // output, then usage, then a whole last frame
}

func TestExplicitOnlyAndUsageAfterOutputDifferOnTheSameSequence(t *testing.T) {
	is := is.New(t)
	seq := []completion.Event{meta, out, use, eof}
	is.Equal(run(t, explicit, seq...).Outcome().State, completion.AmbiguousEOF)          // the strict rule
	is.Equal(run(t, usage, seq...).Outcome().State, completion.CompleteUsageAfterOutput) // the contract's default rule
	is.Equal(run(t, legacy, seq...).Outcome().State, completion.IncompleteTruncated)     // and the legacy rule
	withDone := []completion.Event{meta, out, use, done, eof}
	for _, rule := range allRules {
		is.Equal(run(t, rule, withDone...).Outcome().State, completion.CompleteExplicit) // [DONE] completes under every rule
	}
}

func TestFailureCodeDefaultsAndUnknownCodes(t *testing.T) {
	is := is.New(t)
	tr := completion.NewTracker(usage)
	_, err := apply(t, tr, fail, "")
	is.NoErr(err)                                     // an empty code is accepted
	is.Equal(tr.Outcome().Code, errs.UpstreamFailure) // and means upstream_failure
	tr = completion.NewTracker(usage)
	_, err = apply(t, tr, fail, errs.Code("not_a_code"))
	is.NoErr(err)                                   // an unknown code still fails the stream
	is.Equal(tr.Outcome().Code, errs.InternalError) // as an internal error, never a completion
}

func TestEventAfterOutcomeIsAMarkedErrorAndChangesNothing(t *testing.T) {
	is := is.New(t)
	tr := run(t, usage, out, use, eof)
	before := tr.Outcome()
	for _, e := range allEvents {
		id, err := apply(t, tr, e, errs.UpstreamFailure)
		is.Equal(id, "")                                         // no row applies
		is.True(errors.Is(err, completion.ErrEventAfterOutcome)) // the error is marked
		is.Equal(errs.CodeOf(err), errs.InternalError)           // and is an internal error
		is.Equal(tr.Outcome(), before)                           // the outcome is unchanged
	}
	_, err := tr.Fire(out, "")
	msg := errs.Redact(err)
	is.True(strings.Contains(msg, "Output after outcome COMPLETE_USAGE_AFTER_OUTPUT")) // enums survive redaction
	is.True(strings.Contains(msg, string(usage)))                                      // and so does the rule
}

func TestOutcomeIsOnlyTerminalAtTheEnd(t *testing.T) {
	is := is.New(t)
	tr := completion.NewTracker(usage)
	is.Equal(tr.State(), completion.Awaiting) // a new tracker awaits
	is.True(!tr.Outcome().Terminal())         // and has no outcome
	tr = run(t, usage, out)
	is.Equal(tr.Outcome(), completion.Outcome{State: completion.OutputSeen}) // mid-stream: no code, no completion
	tr = run(t, usage, out, done)
	is.True(!tr.Outcome().Terminal()) // [DONE] alone is not an outcome yet
}

func TestSteadyStateOutputDoesNotAllocate(t *testing.T) {
	is := is.New(t)
	tr := run(t, usage, meta, out)
	allocs := testing.AllocsPerRun(1000, func() {
		_, _ = tr.Fire(out, "")
		_, _ = tr.Fire(meta, "")
	})
	is.Equal(allocs, 0.0) // self-loops are answered from the index without allocating
}

func TestOutcomeRowNamesTheRowThatDecidedTheOutcome(t *testing.T) {
	is := is.New(t)
	for _, r := range allRules {
		tr := completion.NewTracker(r)
		is.Equal(tr.OutcomeRow(), "") // nothing decided yet
		_, err := tr.Fire(out, "")
		is.NoErr(err)
		var last string
		for _, e := range []completion.Event{use, done, eof} {
			if tr.Outcome().Terminal() {
				break
			}
			before := tr.State()
			id, err := tr.Fire(e, "")
			is.NoErr(err)
			if tr.State() != before {
				last = id
			}
		}
		is.True(tr.Outcome().Terminal())
		is.Equal(tr.OutcomeRow(), last) // the row that reached the terminal state
		is.True(last != "")
	}
}

func TestOnlyAFailureCarriesACode(t *testing.T) {
	is := is.New(t)
	tr := completion.NewTracker(usage)
	_, err := tr.Fire(out, errs.UpstreamQuotaExhausted)
	is.Equal(errs.CodeOf(err), errs.InternalError) // a code on another event is the decoder's mistake
	is.Equal(tr.State(), completion.Awaiting)      // and changes nothing
	_, err = tr.Fire(fail, "")
	is.NoErr(err)
	is.Equal(tr.Outcome().Code, errs.UpstreamFailure) // a Failure without a code is upstream_failure
	tr = completion.NewTracker(usage)
	_, err = tr.Fire(fail, "not_a_code")
	is.NoErr(err)
	is.Equal(tr.Outcome().Code, errs.InternalError) // a code outside the catalog is internal_error
}
