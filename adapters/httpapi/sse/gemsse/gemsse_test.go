package gemsse_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/gemsse"
)

func newStream() (*gemsse.Stream, *httptest.ResponseRecorder) {
	rec := httptest.NewRecorder()
	return gemsse.New(sse.New(rec, nil), gemsse.Meta{ResponseID: "r1", Model: "m"}), rec
}

func refused(err error) bool { return errors.Is(err, sse.ErrUngrammatical) }

var failure = map[string]any{"error": map[string]any{"code": 502, "message": "x", "status": "INTERNAL"}}

var call = gemsse.FunctionCall{ID: "call_a", Name: "f", Args: json.RawMessage(`{"a":1}`)}

// The last chunk carries the calls, whole, and the finishReason; a call
// without an id, a name or an object of args is refused, and so is a last
// chunk of a stream that showed nothing.
func TestTheLastChunkCarriesTheCallsAndOnlyAProvenOne(t *testing.T) {
	is := is.New(t)
	s, rec := newStream()
	is.NoErr(s.Open())
	is.True(refused(s.Finish(nil, gemsse.UsageMetadata{}))) // nothing shown
	is.NoErr(s.Fail(failure))
	is.True(!strings.Contains(rec.Body.String(), "finishReason"))

	for _, bad := range []gemsse.FunctionCall{{Name: "f", Args: json.RawMessage(`{}`)}, {ID: "c", Args: json.RawMessage(`{}`)},
		{ID: "c", Name: "f", Args: json.RawMessage(`[1]`)}, {ID: "c", Name: "f", Args: json.RawMessage(`{"a":`)}} {
		s, _ := newStream()
		is.NoErr(s.Open())
		is.True(refused(s.Finish([]gemsse.FunctionCall{bad}, gemsse.UsageMetadata{})))
		is.True(refused(s.Text("x"))) // after a refusal only the failure
		is.NoErr(s.Fail(failure))
	}

	s, rec = newStream()
	is.NoErr(s.Open())
	is.NoErr(s.Text("hi"))
	is.NoErr(s.Finish([]gemsse.FunctionCall{call}, gemsse.UsageMetadata{PromptTokenCount: 2, CandidatesTokenCount: 1, TotalTokenCount: 3}))
	is.True(refused(s.Text("more")))
	is.True(refused(s.Fail(failure)) || s.Fail(failure) != nil)
	events := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n\n"), "\n\n")
	is.Equal(len(events), 2)
	is.Equal(events[1], `data: {"candidates":[{"content":{"parts":[{"functionCall":{"id":"call_a","name":"f","args":{"a":1}}}],"role":"model"},`+
		`"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":1,"totalTokenCount":3},"modelVersion":"m","responseId":"r1"}`)
}

// A failure is one error event and the same object raw after it: the body
// ends in bytes that are no event.
func TestAFailureEndsInAnErrorEventAndARawTail(t *testing.T) {
	is := is.New(t)
	s, rec := newStream()
	is.True(errors.Is(s.Fail(failure), sse.ErrNotStarted)) // before the headers: a plain answer
	is.NoErr(s.Open())
	is.NoErr(s.Text("partial"))
	is.NoErr(s.Fail(failure))
	body := rec.Body.String()
	obj, _ := json.Marshal(failure)
	is.True(strings.HasSuffix(body, "data: "+string(obj)+"\n\n"+string(obj)))
	is.Equal(strings.Count(body, `"error"`), 2)
}

// Whatever the caller asks, in any order, the body is grammatical: data
// events of one candidate each; a finishReason only in the last event;
// calls only there; after an error event only its raw tail.
func TestAnySequenceWritesAGrammaticalStream(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, rec := newStream()
		for _, op := range rapid.SliceOfN(rapid.IntRange(0, 4), 0, 12).Draw(t, "ops") {
			var err error
			switch op {
			case 0:
				err = s.Open()
			case 1:
				err = s.Text(rapid.SampledFrom([]string{"", "t"}).Draw(t, "text"))
			case 2:
				var calls []gemsse.FunctionCall
				if rapid.Bool().Draw(t, "call") {
					calls = append(calls, call)
				}
				err = s.Finish(calls, gemsse.UsageMetadata{})
			case 3:
				err = s.Fail(failure)
			case 4:
				err = s.Flush()
			}
			if err != nil && !refused(err) && !errors.Is(err, sse.ErrNotStarted) {
				t.Fatalf("op %d: %v", op, err)
			}
		}
		_ = s.Flush()
		body := rec.Body.String()
		if body == "" {
			return
		}
		obj, _ := json.Marshal(failure)
		failed := strings.HasSuffix(body, "\n\n"+string(obj))
		if failed {
			body = strings.TrimSuffix(body, string(obj))
		}
		if !strings.HasSuffix(body, "\n\n") {
			t.Fatalf("the body does not end with a whole event: %q", rec.Body.String())
		}
		events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
		finished := false
		for i, e := range events {
			data, ok := strings.CutPrefix(e, "data: ")
			if !ok || finished {
				t.Fatalf("event %d after the finish or not data: %q", i, e)
			}
			if data == string(obj) {
				if !failed || i != len(events)-1 {
					t.Fatalf("an error event that is not last, or without its tail")
				}
				continue
			}
			var c struct {
				Candidates []struct {
					Content struct {
						Parts []map[string]any `json:"parts"`
					} `json:"content"`
					FinishReason string `json:"finishReason"`
				} `json:"candidates"`
			}
			if err := json.Unmarshal([]byte(data), &c); err != nil || len(c.Candidates) != 1 {
				t.Fatalf("event %d: %q", i, data)
			}
			finished = c.Candidates[0].FinishReason != ""
			for _, p := range c.Candidates[0].Content.Parts {
				if _, ok := p["functionCall"]; ok && !finished {
					t.Fatalf("a call before the finish")
				}
			}
		}
		if failed && finished {
			t.Fatalf("a failure after the finish")
		}
	})
}
