package completion_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/sse"
)

// proven reports whether an applied event history proves completion under rule,
// written directly from the contract: [DONE] followed by a clean EOF, or (for
// usage_after_output_v1) a clean EOF after output, a usage after the last output
// and no failure.
func proven(rule completion.Rule, applied []completion.Event) bool {
	n := len(applied)
	if n == 0 || applied[n-1] != completion.EOF {
		return false
	}
	body := applied[:n-1]
	if slices.Contains(body, completion.LoopApproval) {
		return false // the gate is its own outcome, never a completion
	}
	// An end marker: [DONE], or on web_session a done event (which ends the
	// stream only after output).
	marker := func(e completion.Event) bool {
		return e == completion.Done || rule.Web() && e == completion.DoneEvent
	}
	if k := len(body); k > 0 && marker(body[k-1]) && slices.IndexFunc(body, marker) == k-1 {
		return slices.Contains(body, completion.Output) // an end marker proves nothing without output
	}
	if rule != completion.RuleUsageAfterOutput || slices.Contains(body, completion.Failure) || slices.ContainsFunc(body, marker) {
		return false
	}
	lastOut := -1
	for i, e := range body {
		if e == completion.Output {
			lastOut = i
		}
	}
	return lastOut >= 0 && slices.Contains(body[lastOut:], completion.Usage)
}

// TestTrackerMatchesModel drives a tracker and the model with the same random
// event sequence and compares them after every step.
func TestTrackerMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rule := rapid.SampledFrom(allRules).Draw(rt, "rule")
		tr := completion.NewTracker(rule)
		m := model{rule: rule}
		var applied []completion.Event
		actions := map[string]func(*rapid.T){}
		for _, e := range allEvents {
			actions[string(e)] = func(rt *rapid.T) {
				code := errs.Code("")
				if e == completion.Failure {
					code = rapid.SampledFrom(failureCodes).Draw(rt, "code")
				}
				before := tr.Outcome()
				legal := m.step(e, code)
				id, err := apply(rt, tr, e, code)
				switch {
				case legal && err != nil:
					rt.Fatalf("%s in %s: got error %v vs model legal", e, before.State, err)
				case !legal && !errors.Is(err, completion.ErrEventAfterOutcome):
					rt.Fatalf("%s in %s: got %v vs model: event after outcome", e, before.State, err)
				case !legal && (id != "" || tr.Outcome() != before):
					rt.Fatalf("%s in %s: terminal state did not absorb: id %q, outcome %+v", e, before.State, id, tr.Outcome())
				case legal:
					applied = append(applied, e)
				}
			}
		}
		actions[""] = func(rt *rapid.T) {
			got, want := tr.Outcome(), m.outcome()
			if got != want {
				rt.Fatalf("after %v: got %+v vs model %+v", applied, got, want)
			}
			if got.Complete != got.State.Complete() || (got.Complete && got.Code != "") {
				rt.Fatalf("outcome %+v is inconsistent", got)
			}
			if got.Complete && slices.Contains(applied, completion.Failure) {
				rt.Fatalf("completion %s after a Failure: %v", got.State, applied)
			}
			if got.Complete != proven(rule, applied) {
				rt.Fatalf("complete=%v but proof=%v for %v", got.Complete, proven(rule, applied), applied)
			}
		}
		rt.Repeat(actions)
	})
}

// SSE streams.

// frames are the data payloads a stream is built from, by name.
var frames = map[string]string{
	"conversation": `{"type":"conversation","data":{"id":"c-1"}}`,
	"thinking":     `{"type":"thinkingChunk","data":{"text":"hmm…"}}`,
	"ping":         `{"type":"ping"}`,
	"text":         `{"type":"textChunk","data":{"textContent":"héllo 😀 wörld"}}`,
	"tool":         `{"type":"toolCallChunk","data":{"id":"t1","arguments":"{\"a\":1}"}}`,
	"usage":        `{"type":"usage","data":{"inputTokens":3,"outputTokens":5}}`,
	"failure":      `{"type":"failure","data":{"message":"nope"}}`,
	"unknown":      `{"type":"surprise"}`,
	"malformed":    `{"type":"textChunk","data":`,
	"done":         `[DONE]`,
	"doneEvent":    `{"type":"done","data":{}}`,
	"gate":         `{"type":"loopApprovalChunk","data":{"message":"Continue?"}}`,
}

var frameNames = func() []string {
	var ns []string
	for n := range frames {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}()

// classify is the tiny test decoder: a data payload becomes one event.
func classify(payload []byte) (completion.Event, errs.Code) {
	if string(payload) == "[DONE]" {
		return completion.Done, ""
	}
	var v struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(payload, &v); err != nil {
		return completion.Failure, errs.UpstreamMalformedEvent
	}
	switch v.Type {
	case "conversation", "thinkingChunk", "ping":
		return completion.Metadata, ""
	case "textChunk", "toolCallChunk":
		return completion.Output, ""
	case "usage":
		return completion.Usage, ""
	case "done":
		return completion.DoneEvent, ""
	case "loopApprovalChunk":
		return completion.LoopApproval, ""
	case "failure", "error":
		return completion.Failure, errs.UpstreamFailure
	}
	return completion.Failure, errs.UpstreamUnverifiedEventShape
}

var errStop = errors.New("completion_test: outcome reached")

// decode feeds chunks through sse.Splitter, sse.ParseData, classify and a Tracker,
// stopping at the first outcome, and ends with EOF.
func decode(tb namer, rule completion.Rule, chunks [][]byte) (completion.Outcome, error) {
	tr := completion.NewTracker(rule)
	sp := sse.NewSplitter(1 << 10)
	emit := func(line []byte) error {
		if tr.State().Terminal() {
			return errStop
		}
		payload, ok := sse.ParseData(line)
		if !ok {
			return nil
		}
		e, code := classify(payload)
		_, err := apply(tb, tr, e, code)
		return err
	}
	for _, c := range chunks {
		if err := sp.Feed(c, emit); err != nil {
			if errors.Is(err, errStop) {
				break
			}
			return tr.Outcome(), err
		}
	}
	if !tr.State().Terminal() {
		end := completion.EOF
		if sp.Partial() {
			end = completion.EOFPartial
		}
		if _, err := apply(tb, tr, end, ""); err != nil {
			return tr.Outcome(), fmt.Errorf("completion_test: %s: %w", end, err)
		}
	}
	return tr.Outcome(), nil
}

// verdict is the expected outcome, computed without the Splitter: split the
// stream on "\n", classify every whole line, and run the model.
func verdict(rule completion.Rule, stream string) completion.Outcome {
	m := model{rule: rule}
	lines := strings.Split(stream, "\n")
	tail := lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		if m.final != "" {
			break
		}
		if p, ok := strings.CutPrefix(strings.TrimSuffix(l, "\r"), "data:"); ok {
			e, code := classify([]byte(strings.TrimPrefix(p, " ")))
			m.step(e, code)
		}
	}
	if tail != "" {
		m.step(completion.EOFPartial, "")
	} else {
		m.step(completion.EOF, "")
	}
	return m.outcome()
}

// TestChunkedSSEStreamsReachTheSameOutcome builds random SSE streams, splits them
// at arbitrary byte boundaries (inside runes and CRLFs too) and checks that the
// outcome equals the unsplit stream's and the model's verdict.
func TestChunkedSSEStreamsReachTheSameOutcome(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rule := rapid.SampledFrom(allRules).Draw(rt, "rule")
		var b strings.Builder
		for range rapid.IntRange(0, 12).Draw(rt, "lines") {
			eol := rapid.SampledFrom([]string{"\n", "\r\n"}).Draw(rt, "eol")
			switch rapid.IntRange(0, 9).Draw(rt, "kind") {
			case 0:
				b.WriteString(": keep-alive" + eol)
			case 1:
				b.WriteString(eol)
			case 2:
				b.WriteString("event: message" + eol)
			default:
				sep := rapid.SampledFrom([]string{"data: ", "data:"}).Draw(rt, "sep")
				b.WriteString(sep + frames[rapid.SampledFrom(frameNames).Draw(rt, "frame")] + eol)
			}
		}
		truncated := rapid.Bool().Draw(rt, "truncated")
		if truncated {
			last := "data: " + frames[rapid.SampledFrom(frameNames).Draw(rt, "lastFrame")] + "\r"
			b.WriteString(last[:rapid.IntRange(1, len(last)).Draw(rt, "keep")])
		}
		stream := b.String()

		whole, err := decode(rt, rule, [][]byte{[]byte(stream)})
		if err != nil {
			rt.Fatalf("whole stream: %v", err)
		}
		var chunks [][]byte
		for rest := []byte(stream); len(rest) > 0; {
			n := rapid.IntRange(1, max(1, len(rest))).Draw(rt, "chunk")
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		split, err := decode(rt, rule, chunks)
		if err != nil {
			rt.Fatalf("split stream: %v", err)
		}
		if split != whole {
			rt.Fatalf("split into %d chunks: got %+v vs whole %+v", len(chunks), split, whole)
		}
		if want := verdict(rule, stream); whole != want {
			rt.Fatalf("got %+v vs model %+v for %q", whole, want, stream)
		}
		if truncated && whole.Complete {
			rt.Fatalf("a truncated final frame completed: %+v for %q", whole, stream)
		}
	})
}
