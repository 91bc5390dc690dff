package msgsse_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/msgsse"
	"github.com/pmgate/pmgate/internal/anthropicsse"
)

type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

var overloaded = apiError{Type: "overloaded_error", Message: "try later"}

func newStream() (*msgsse.Stream, *httptest.ResponseRecorder) {
	rec := httptest.NewRecorder()
	return msgsse.New(sse.New(rec, nil)), rec
}

func refused(err error) bool { return errors.Is(err, sse.ErrUngrammatical) }

// A whole turn through the emitter is a stream the strict checker accepts:
// text, a tool_use whose input comes only in input_json_delta, an
// argumentless tool_use that still gets {}, and stop_reason tool_use.
func TestAGrammaticalTurnPassesTheChecker(t *testing.T) {
	is := is.New(t)
	s, rec := newStream()
	is.NoErr(s.Start("msg_1", "m", 12))
	is.NoErr(s.Text("Let me look."))
	is.NoErr(s.ToolUse("toolu_a", "Read"))
	is.NoErr(s.Input(`{"path":`))
	is.NoErr(s.Input(`"a.go"}`))
	is.NoErr(s.ToolUse("toolu_b", "List"))
	is.NoErr(s.Stop(nil, msgsse.Usage{InputTokens: 12, OutputTokens: 5}))
	res, err := anthropicsse.CheckSuccess(rec.Body.Bytes())
	is.NoErr(err)
	is.Equal(res.StopReason, "tool_use") // any tool_use block: tool_use
	is.Equal(res.Text(), "Let me look.")
	uses := res.ToolUses()
	is.Equal(len(uses), 2)
	is.Equal(string(uses[0].Input), `{"path":"a.go"}`)
	is.Equal(string(uses[1].Input), `{}`) // no input deltas: {} all the same
}

// Tool input outside an open tool_use block is refused and not written;
// the stream can then only fail, and it fails grammatically.
func TestToolInputBeforeItsBlockOpensIsRefused(t *testing.T) {
	is := is.New(t)
	s, rec := newStream()
	is.NoErr(s.Start("msg_1", "m", 1))
	before := rec.Body.Len()
	is.True(refused(s.Input(`{"a":1}`))) // no tool_use block is open
	is.True(refused(s.Text("hi")))       // text too: the stream can only fail now
	is.True(refused(s.Input(`{}`)))      // inside a text block either
	is.True(refused(s.Stop(nil, msgsse.Usage{})))
	is.NoErr(s.Fail(overloaded, "req_1"))
	is.NoErr(s.Flush())
	is.True(!strings.Contains(rec.Body.String()[before:], "input_json_delta")) // the refused input was not written
	res, err := anthropicsse.CheckFailed(rec.Body.Bytes())
	is.NoErr(err)
	is.Equal(res.Error.Type, "overloaded_error")
}

// After the error event nothing follows: no message_delta, no
// message_stop, no second error, no ping.
func TestNothingFollowsTheErrorEvent(t *testing.T) {
	is := is.New(t)
	s, rec := newStream()
	is.NoErr(s.Start("msg_1", "m", 1))
	is.NoErr(s.Text("partial"))
	is.NoErr(s.Fail(overloaded, "req_1"))
	end := rec.Body.Len()
	is.True(refused(s.Stop(nil, msgsse.Usage{}))) // message_stop after an error
	is.True(refused(s.Text("more")))
	is.True(refused(s.Fail(overloaded, "req_1"))) // a second error
	is.True(s.Ping())                             // pings go on until Close, but write nothing
	is.Equal(rec.Body.Len(), end)
	is.True(strings.HasSuffix(rec.Body.String(), "event: error\n"+strings.SplitN(rec.Body.String()[strings.LastIndex(rec.Body.String(), "event: error\n")+len("event: error\n"):], "\n", 2)[0]+"\n\n"))
	_, err := anthropicsse.CheckFailed(rec.Body.Bytes())
	is.NoErr(err)
}

func TestTheOpeningRulesAreEnforced(t *testing.T) {
	is := is.New(t)
	s, rec := newStream()
	is.True(refused(s.Text("x")))                                  // before message_start
	is.True(errors.Is(s.Fail(overloaded, "r"), sse.ErrNotStarted)) // before the headers a failure is a plain error, not an event
	is.True(s.Ping())                                              // a ping before the start writes nothing
	is.Equal(rec.Body.Len(), 0)                                    // nothing was written
	is.True(!s.Started())                                          // and the headers did not go
	is.NoErr(s.Start("msg_1", "m", 1))                             //
	is.True(refused(s.Start("msg_2", "m", 1)))                     // message_start once
	s2, _ := newStream()                                           //
	is.NoErr(s2.Start("msg_1", "m", 1))                            //
	is.True(refused(s2.ToolUse("", "Read")))                       // a tool_use needs its id
	s3, _ := newStream()                                           //
	is.NoErr(s3.Start("msg_1", "m", 1))                            //
	is.True(refused(s3.Stop(nil, msgsse.Usage{})))                 // an end_turn that carries nothing
	s4, rec4 := newStream()                                        //
	is.NoErr(s4.Start("msg_1", "m", 1))                            //
	seq := "</x>"                                                  //
	is.NoErr(s4.Stop(&seq, msgsse.Usage{}))                        // but a stop sequence that cut everything is an answer
	res, err := anthropicsse.CheckSuccess(rec4.Body.Bytes())       //
	is.NoErr(err)                                                  //
	is.Equal(res.StopReason, "stop_sequence")                      //
}

// A stop sequence that cut text after a tool_use was shown does not hide
// the call: the stop reason stays tool_use (the checker's rule).
func TestAToolUseShownMakesTheStopReasonToolUse(t *testing.T) {
	is := is.New(t)
	s, rec := newStream()
	is.NoErr(s.Start("msg_1", "m", 1))
	is.NoErr(s.ToolUse("toolu_a", "Read"))
	is.NoErr(s.Input(`{}`))
	is.NoErr(s.Text("then"))
	seq := "</x>"
	is.NoErr(s.Stop(&seq, msgsse.Usage{}))
	res, err := anthropicsse.CheckSuccess(rec.Body.Bytes())
	is.NoErr(err)
	is.Equal(res.StopReason, "tool_use")
	is.True(res.StopSequence == nil)
}

// Close ends the pings: after it nothing is written and the timer stops.
func TestNoPingAfterClose(t *testing.T) {
	is := is.New(t)
	s, rec := newStream()
	is.NoErr(s.Start("msg_1", "m", 1))
	is.True(s.Ping())
	n := rec.Body.Len()
	is.True(strings.HasSuffix(rec.Body.String(), "event: ping\ndata: {\"type\":\"ping\"}\n\n")) // a ping is written at once
	s.Close()
	is.True(!s.Ping())
	is.NoErr(s.Flush())
	is.Equal(rec.Body.Len(), n)
}

// Whatever a caller asks, in any order, the bytes written are a prefix the
// checker accepts once the stream ends: every accepted call keeps the
// stream grammatical, and after any refusal the failure event still ends
// it grammatically.
func TestAnyCallSequenceWritesAGrammaticalStream(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, rec := newStream()
		started := false
		if rapid.Bool().Draw(t, "start") {
			if err := s.Start("msg_1", "m", rapid.Int64Range(0, 50).Draw(t, "input")); err != nil {
				t.Fatal(err)
			}
			started = true
		}
		ended := false
		for _, op := range rapid.SliceOfN(rapid.IntRange(0, 7), 0, 20).Draw(t, "ops") {
			var err error
			switch op {
			case 0:
				err = s.Text(rapid.SampledFrom([]string{"", "a", "<b>"}).Draw(t, "text"))
			case 1:
				err = s.ToolUse(rapid.SampledFrom([]string{"", "toolu_1"}).Draw(t, "id"), "Read")
			case 2:
				err = s.Input(rapid.SampledFrom([]string{"", "{", `"k":1}`, "{}"}).Draw(t, "json"))
			case 3:
				var seq *string
				if rapid.Bool().Draw(t, "seq") {
					x := "</x>"
					seq = &x
				}
				err = s.Stop(seq, msgsse.Usage{InputTokens: rapid.Int64Range(0, 50).Draw(t, "in"), OutputTokens: 3})
				ended = ended || err == nil
			case 4:
				err = s.Fail(overloaded, "req_1")
				ended = ended || err == nil
			case 5:
				s.Ping()
			case 6:
				err = s.Flush()
			case 7:
				err = s.Start("msg_2", "m", 1)
				started = started || err == nil
			}
			if err != nil && !refused(err) && !errors.Is(err, sse.ErrNotStarted) {
				t.Fatalf("op %d: %v", op, err)
			}
		}
		if !started {
			if rec.Body.Len() != 0 {
				t.Fatalf("wrote before message_start: %q", rec.Body.String())
			}
			return
		}
		if !ended {
			if err := s.Fail(overloaded, "req_1"); err != nil {
				t.Fatalf("the failure event refused on an open stream: %v", err)
			}
		}
		_ = s.Flush()
		if _, err := anthropicsse.Check(rec.Body.Bytes()); err != nil {
			t.Fatalf("ungrammatical stream: %v\n%s", err, rec.Body.String())
		}
	})
}
