package chatsse_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/chatsse"
)

func newStream(usage bool) (*chatsse.Stream, *httptest.ResponseRecorder) {
	rec := httptest.NewRecorder()
	return chatsse.New(sse.New(rec, nil), chatsse.Meta{ID: "chatcmpl-1", Model: "m", IncludeUsage: usage}), rec
}

func refused(err error) bool { return errors.Is(err, sse.ErrUngrammatical) }

var failure = map[string]any{"error": map[string]string{"code": "upstream_incomplete_stream"}}

// Tool calls open in index order with their id and name, continue only
// once open, and the finish reason agrees with the calls shown.
func TestToolCallsAndTheFinishFollowTheGrammar(t *testing.T) {
	is := is.New(t)
	s, _ := newStream(false)
	is.NoErr(s.Open())
	is.True(refused(s.ToolCall(0, "", "", `{"a":`))) // a continuation of a call not opened
	s, _ = newStream(false)
	is.NoErr(s.Open())
	is.True(refused(s.ToolCall(1, "call_b", "f", ""))) // index 1 before 0
	s, _ = newStream(false)
	is.NoErr(s.Open())
	is.True(refused(s.Finish(chatsse.FinishToolCalls, nil))) // tool_calls without a call
	s, _ = newStream(false)
	is.NoErr(s.Open())
	is.NoErr(s.ToolCall(0, "call_a", "f", `{"a":`))
	is.NoErr(s.ToolCall(0, "", "", `1}`))
	is.True(refused(s.Finish(chatsse.FinishStop, nil))) // stop after a call
	is.True(refused(s.Text("x")))                       // and after a refusal only the error event
	is.NoErr(s.Fail(failure))
}

// [DONE] comes only after a proven end (Finish), as the last event; an
// error event ends the stream and nothing follows it.
func TestDoneOnlyAfterTheFinishAndNothingAfterAnError(t *testing.T) {
	is := is.New(t)
	s, rec := newStream(true)
	is.True(refused(s.Text("x"))) // before the role chunk
	is.Equal(rec.Body.Len(), 0)
	is.NoErr(s.Open())
	is.NoErr(s.Text("hi"))
	is.NoErr(s.Fail(failure))
	n := rec.Body.Len()
	is.True(refused(s.Finish(chatsse.FinishStop, nil))) // no finish after the error
	is.True(refused(s.Fail(failure)))                   // nor a second error
	is.Equal(rec.Body.Len(), n)
	is.True(!strings.Contains(rec.Body.String(), "[DONE]"))

	s, _ = newStream(false)
	is.NoErr(s.Open())
	is.True(refused(s.Open())) // one role chunk

	s, rec = newStream(true)
	is.NoErr(s.Open())
	is.NoErr(s.Finish(chatsse.FinishStop, nil))
	is.True(strings.HasSuffix(rec.Body.String(), `"choices":[],"usage":null}`+"\n\ndata: [DONE]\n\n")) // the usage chunk, then [DONE]
	is.True(refused(s.Text("late")))
}

// Any call sequence writes a stream whose chunks keep the rules: one role
// chunk first, calls indexed densely, at most one finish agreeing with the
// calls, and [DONE] exactly when a finish was written, last.
func TestAnyCallSequenceWritesAGrammaticalStream(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, rec := newStream(rapid.Bool().Draw(t, "usage"))
		for _, op := range rapid.SliceOfN(rapid.IntRange(0, 5), 0, 15).Draw(t, "ops") {
			var err error
			switch op {
			case 0:
				err = s.Open()
			case 1:
				err = s.Text("t")
			case 2:
				i := rapid.IntRange(0, 2).Draw(t, "index")
				if rapid.Bool().Draw(t, "first") {
					err = s.ToolCall(i, "call", "f", "")
				} else {
					err = s.ToolCall(i, "", "", "{}")
				}
			case 3:
				err = s.Finish(rapid.SampledFrom([]string{chatsse.FinishStop, chatsse.FinishToolCalls, "length"}).Draw(t, "reason"), nil)
			case 4:
				err = s.Fail(failure)
			case 5:
				err = s.Flush()
			}
			if err != nil && !refused(err) && !errors.Is(err, sse.ErrNotStarted) {
				t.Fatalf("op %d: %v", op, err)
			}
		}
		_ = s.Flush()
		events := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n\n"), "\n\n")
		if rec.Body.Len() == 0 {
			return
		}
		calls, finishes, done := 0, 0, false
		for i, e := range events {
			data, ok := strings.CutPrefix(e, "data: ")
			if !ok || done {
				t.Fatalf("event %d after [DONE] or not data: %q", i, e)
			}
			if data == "[DONE]" {
				done = true
				continue
			}
			var c struct {
				Choices []struct {
					Delta struct {
						Role      string
						ToolCalls []struct {
							Index int
							ID    string
						} `json:"tool_calls"`
					}
					FinishReason *string `json:"finish_reason"`
				}
				Error any
			}
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				t.Fatal(err)
			}
			if (i == 0) != (len(c.Choices) == 1 && c.Choices[0].Delta.Role == "assistant") {
				t.Fatalf("the role chunk is not exactly the first: %d", i)
			}
			if c.Error != nil && i != len(events)-1 {
				t.Fatalf("an event after the error event")
			}
			for _, ch := range c.Choices {
				for _, tc := range ch.Delta.ToolCalls {
					if tc.ID != "" {
						if tc.Index != calls {
							t.Fatalf("call %d opened as %d", calls, tc.Index)
						}
						calls++
					} else if tc.Index >= calls {
						t.Fatalf("continuation of call %d not opened", tc.Index)
					}
				}
				if f := ch.FinishReason; f != nil {
					finishes++
					if (*f == "tool_calls") != (calls > 0) || (*f != "stop" && *f != "tool_calls") {
						t.Fatalf("finish %s after %d calls", *f, calls)
					}
				}
			}
		}
		if finishes > 1 || done != (finishes == 1) {
			t.Fatalf("%d finishes, [DONE] %v", finishes, done)
		}
	})
}
