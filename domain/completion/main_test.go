package completion_test

import (
	"os"
	"testing"

	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/fsm"
	"github.com/pmgate/pmgate/internal/audit"
)

// TestMain runs the tests, writes the row audit and, on a full run, fails
// unless the tests applied every row of every rule.
func TestMain(m *testing.M) {
	tables := make([]fsm.Table, len(allRules))
	for i, r := range allRules {
		tables[i] = completion.Table(r)
	}
	os.Exit(audit.Main(m, tables...))
}

// Hand-written lists, independent of the package's own ones.
var (
	allRules = []completion.Rule{completion.RuleLegacyDone, completion.RuleExplicitOnly, completion.RuleUsageAfterOutput}

	nonTerminalStates = []completion.State{
		completion.Awaiting, completion.MetadataSeen, completion.OutputSeen, completion.OutputUsage, completion.DoneSeen,
		completion.GateSeen, completion.GateDone,
	}
	terminalStates = []completion.State{
		completion.CompleteExplicit, completion.CompleteUsageAfterOutput, completion.IncompleteTruncated,
		completion.AmbiguousEOF, completion.IncompleteEmpty, completion.Failed, completion.Aborted, completion.TimedOut,
		completion.LoopApprovalGated,
	}
	allStates = append(append([]completion.State(nil), nonTerminalStates...), terminalStates...)

	allEvents = []completion.Event{
		completion.Metadata, completion.Output, completion.Usage, completion.Failure, completion.Done,
		completion.EOF, completion.EOFPartial, completion.Abort, completion.Timeout, completion.ReadError,
		completion.DoneEvent, completion.LoopApproval,
	}

	// failureCodes are codes a decoder may report through Failure.
	failureCodes = []errs.Code{
		errs.UpstreamFailure, errs.UpstreamMalformedEvent, errs.UpstreamUnverifiedEventShape,
		errs.UpstreamQuotaExhausted, errs.UpstreamModelMismatch, errs.UpstreamEventTooLarge,
	}
)

var tableNames = func() map[completion.Rule]string {
	m := map[completion.Rule]string{}
	for _, r := range allRules {
		m[r] = completion.Table(r).Name
	}
	return m
}()

// namer is what the audit needs of a test: *testing.T, *rapid.T (which reports
// its enclosing test's name) or a subtest.
type namer interface{ Name() string }

// apply feeds one event to a tracker and, when a row applied,
// records the hit for the audit. code is only used by Failure.
func apply(tb namer, tr *completion.Tracker, e completion.Event, code errs.Code) (string, error) {
	id, err := fire(tr, e, code)
	if err == nil {
		audit.Record(tableNames[tr.Rule()], id, tb.Name())
	}
	return id, err
}

// fire fires one event; only a Failure carries the code.
func fire(tr *completion.Tracker, e completion.Event, code errs.Code) (string, error) {
	if e != completion.Failure {
		code = ""
	}
	return tr.Fire(e, code)
}

// run feeds events to a new tracker, failing the test on any error; Failure
// carries upstream_failure.
func run(t *testing.T, rule completion.Rule, evs ...completion.Event) *completion.Tracker {
	t.Helper()
	tr := completion.NewTracker(rule)
	for i, e := range evs {
		if _, err := apply(t, tr, e, errs.UpstreamFailure); err != nil {
			t.Fatalf("event %d (%s) in rule %s: %v", i, e, rule, err)
		}
	}
	return tr
}

// model is the hand-written reference: it tracks the observed facts (docs/COMPLETION.md) and
// derives states from them. It shares no code with the package's rows.
type model struct {
	rule   completion.Rule
	valid  bool // a valid event was seen
	output bool // output was seen
	usage  bool // a usage event came after the last output
	done   bool // [DONE] was seen
	gate   bool // a loop-approval gate was seen (before any output)
	final  completion.State
	code   errs.Code
}

// modelIn returns the model of a tracker that is in s.
func modelIn(rule completion.Rule, s completion.State) model {
	m := model{rule: rule}
	switch s {
	case completion.Awaiting:
	case completion.MetadataSeen:
		m.valid = true
	case completion.OutputSeen:
		m.valid, m.output = true, true
	case completion.OutputUsage:
		m.valid, m.output, m.usage = true, true, true
	case completion.DoneSeen:
		m.done = true
	case completion.GateSeen:
		m.valid, m.gate = true, true
	case completion.GateDone:
		m.gate, m.done = true, true
	default:
		m.final = s
	}
	return m
}

// step applies an event and reports whether it was legal.
func (m *model) step(e completion.Event, code errs.Code) bool {
	end := func(s completion.State, c errs.Code) { m.final, m.code = s, c }
	switch {
	case m.final != "":
		return false
	case e == completion.Abort:
		end(completion.Aborted, errs.ClientCancelled)
	case e == completion.Timeout:
		end(completion.TimedOut, errs.UpstreamTimeout)
	case e == completion.ReadError:
		end(completion.Failed, errs.UpstreamConnectionLost)
	case m.done && e == completion.EOF && m.gate:
		end(completion.LoopApprovalGated, errs.UpstreamLoopApproval)
	case m.done && e == completion.EOF:
		end(completion.CompleteExplicit, "")
	case m.done:
		end(completion.Failed, errs.UpstreamDataAfterDone)
	case e == completion.LoopApproval && m.output, e == completion.Output && m.gate:
		end(completion.Failed, errs.UpstreamUnsupportedEvent) // the gate never mixes with output
	case e == completion.LoopApproval:
		m.valid, m.gate = true, true
	case e == completion.Metadata:
		m.valid = true
	case e == completion.Usage:
		m.valid = true
		m.usage = m.usage || m.output
	case e == completion.Output:
		m.valid, m.output, m.usage = true, true, false
	case e == completion.Failure:
		end(completion.Failed, code)
	case e == completion.Done && !m.output && !m.gate:
		end(completion.IncompleteEmpty, errs.UpstreamEmptyStream) // a terminal is no proof of content
	case e == completion.Done:
		m.done = true
	case e == completion.DoneEvent && m.rule == completion.RuleLegacyDone:
		m.valid = true // a known event that ends nothing on access_token
	case e == completion.DoneEvent && (m.output || m.gate):
		m.done = true // an explicit end on web_session after output or the gate
	case e == completion.DoneEvent:
		end(completion.IncompleteEmpty, errs.UpstreamEmptyStream)
	case e == completion.EOFPartial:
		end(completion.IncompleteTruncated, errs.UpstreamIncompleteStream)
	case e == completion.EOF && m.rule == completion.RuleLegacyDone:
		end(completion.IncompleteTruncated, errs.UpstreamIncompleteStream)
	case e == completion.EOF && m.gate:
		end(completion.LoopApprovalGated, errs.UpstreamLoopApproval) // the gate, then a clean end (web_session)
	case e == completion.EOF && m.rule == completion.RuleUsageAfterOutput && m.output && m.usage:
		end(completion.CompleteUsageAfterOutput, "")
	case e == completion.EOF && m.output:
		end(completion.AmbiguousEOF, errs.UpstreamCompletionAmbiguous)
	case e == completion.EOF:
		end(completion.IncompleteEmpty, errs.UpstreamEmptyStream)
	default:
		panic("completion_test: model has no case for " + string(e))
	}
	return true
}

// state is the state the model expects the tracker to be in.
func (m model) state() completion.State {
	switch {
	case m.final != "":
		return m.final
	case m.done && m.gate:
		return completion.GateDone
	case m.done:
		return completion.DoneSeen
	case m.gate:
		return completion.GateSeen
	case m.usage:
		return completion.OutputUsage
	case m.output:
		return completion.OutputSeen
	case m.valid:
		return completion.MetadataSeen
	}
	return completion.Awaiting
}

// outcome is the outcome the model expects.
func (m model) outcome() completion.Outcome {
	s := m.state()
	o := completion.Outcome{State: s}
	if m.final != "" {
		o.Complete = s == completion.CompleteExplicit || s == completion.CompleteUsageAfterOutput
		o.Code = m.code
	}
	return o
}
