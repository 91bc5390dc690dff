package respsse_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/respsse"
)

func newStream() (*respsse.Stream, *httptest.ResponseRecorder) {
	rec := httptest.NewRecorder()
	return respsse.New(sse.New(rec, nil)), rec
}

func refused(err error) bool { return errors.Is(err, sse.ErrUngrammatical) }

var obj = map[string]string{"object": "response"}

type event struct {
	Type        string `json:"type"`
	Seq         int    `json:"sequence_number"`
	OutputIndex *int   `json:"output_index"`
}

func events(t interface{ Fatal(...any) }, body string) (out []event) {
	for _, e := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		if e == "" {
			continue
		}
		name, data, _ := strings.Cut(e, "\n")
		var ev event
		if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &ev); err != nil || "event: "+ev.Type != name {
			t.Fatal("bad event", e, err)
		}
		out = append(out, ev)
	}
	return out
}

func TestTextOnlyInsideAMessageAndCallsOnlyOutsideOne(t *testing.T) {
	is := is.New(t)
	s, _ := newStream()
	is.True(refused(s.OpenMessage("msg_1"))) // before response.created
	is.NoErr(s.Open(obj))
	is.True(refused(s.Text("x"))) // output text outside a message item
	s, _ = newStream()
	is.NoErr(s.Open(obj))
	is.NoErr(s.OpenMessage("msg_1"))
	is.True(refused(s.OpenMessage("msg_2")))                   // a message inside a message
	is.True(refused(s.ToolCall(respsse.Call{ItemID: "fc_1"}))) // a call inside a message
	is.True(refused(s.Complete(obj)))                          // completed with a message open
	is.NoErr(s.Fail(obj))                                      // the failure still ends it
}

// The stream ends once: nothing after response.failed or
// response.completed.
func TestNothingFollowsTheEnd(t *testing.T) {
	is := is.New(t)
	s, rec := newStream()
	is.NoErr(s.Open(obj))
	is.NoErr(s.OpenMessage("msg_1"))
	is.NoErr(s.Text("partial"))
	is.NoErr(s.Fail(obj))
	n := rec.Body.Len()
	is.True(refused(s.Complete(obj)))
	is.True(refused(s.Fail(obj)))
	is.True(refused(s.Text("more")))
	is.Equal(rec.Body.Len(), n)
	evs := events(t, rec.Body.String())
	is.Equal(evs[len(evs)-1].Type, "response.failed")
}

// Whatever is asked, the events written are numbered 0, 1, … in order,
// open with created and in_progress, give output indexes in order, and end
// with at most one completed or failed, last.
func TestAnyCallSequenceNumbersItsEventsInOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s, rec := newStream()
		for _, op := range rapid.SliceOfN(rapid.IntRange(0, 6), 0, 20).Draw(t, "ops") {
			var err error
			switch op {
			case 0:
				err = s.Open(obj)
			case 1:
				err = s.OpenMessage("msg")
			case 2:
				err = s.Text("t")
			case 3:
				err = s.CloseMessage()
			case 4:
				err = s.ToolCall(respsse.Call{ItemID: "fc", CallID: "c", Name: "f", Custom: rapid.Bool().Draw(t, "custom"), Arguments: "{}", Input: "x"})
			case 5:
				if rapid.Bool().Draw(t, "ok") {
					err = s.Complete(obj)
				} else {
					err = s.Fail(obj)
				}
			case 6:
				err = s.Flush()
			}
			if err != nil && !refused(err) && !errors.Is(err, sse.ErrNotStarted) {
				t.Fatalf("op %d: %v", op, err)
			}
		}
		_ = s.Flush()
		evs := events(t, rec.Body.String())
		added, maxIndex := 0, -1
		for i, ev := range evs {
			if ev.Seq != i {
				t.Fatalf("event %d numbered %d", i, ev.Seq)
			}
			if (i == 0) != (ev.Type == "response.created") || (i == 1) != (ev.Type == "response.in_progress") {
				t.Fatalf("event %d is %s", i, ev.Type)
			}
			if (ev.Type == "response.completed" || ev.Type == "response.failed") && i != len(evs)-1 {
				t.Fatalf("%s is not the last event", ev.Type)
			}
			if ev.Type == "response.output_item.added" {
				if *ev.OutputIndex != added {
					t.Fatalf("item added at %d, want %d", *ev.OutputIndex, added)
				}
				added++
			}
			if ev.OutputIndex != nil {
				maxIndex = max(maxIndex, *ev.OutputIndex)
				if *ev.OutputIndex >= added {
					t.Fatalf("%s at an index not added", ev.Type)
				}
			}
		}
	})
}
