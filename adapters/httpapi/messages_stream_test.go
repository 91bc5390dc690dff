package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/internal/anthropicsse"
)

func toolDelta(i int, id, name, args string) app.Delta {
	return app.Delta{ToolCall: &app.ToolCallDelta{Index: i, ID: id, Name: name, Arguments: args}}
}

const msgTools = `,"tools":[{"name":"Read","description":"read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"cache_control":{"type":"ephemeral"}}]`

func TestMessagesStreamsToolUseBlocksWithInputJSONDeltas(t *testing.T) {
	is := is.New(t)
	svc := returning(script(app.Delta{Text: "Let me look."},
		toolDelta(0, "toolu_pmn_a", "Read", `{"path":`), toolDelta(0, "", "", `"a.go"}`),
		toolDelta(1, "toolu_pmn_b", "Read", `{"path":"b.go"}`),
		app.Delta{Finish: app.FinishToolCalls}), nil)
	h, _ := newServer(t, svc)
	rec := serve(h, msgRequest(msgBody(userHi, `,"stream":true`+msgTools)))
	is.Equal(rec.Code, 200)
	res, err := anthropicsse.CheckSuccess(rec.Body.Bytes())
	is.NoErr(err)
	is.Equal(res.StopReason, "tool_use") // any tool_use block: tool_use, never end_turn
	uses := res.ToolUses()
	is.Equal(len(uses), 2)
	is.Equal(uses[0].ID, "toolu_pmn_a")
	is.Equal(string(uses[0].Input), `{"path":"a.go"}`)
	is.Equal(string(uses[1].Input), `{"path":"b.go"}`)
	is.Equal(res.Text(), "Let me look.")
	is.True(strings.Contains(rec.Body.String(), `"content_block":{"type":"tool_use","id":"toolu_pmn_a","name":"Read","input":{}}`))
	_, req := svc.Last()
	is.Equal(len(req.Tools), 1)
	is.Equal(req.Tools[0].Name, "Read")
	is.True(len(req.Tools[0].UpstreamParameters) > 0) // lowered like every tool
}

func TestMessagesJSONToolUse(t *testing.T) {
	is := is.New(t)
	svc := returning(script(toolDelta(0, "toolu_pmn_a", "Read", `{"path":"a.go"}`), app.Delta{Finish: app.FinishToolCalls}), nil)
	h, _ := newServer(t, svc)
	rec := serve(h, msgRequest(msgBody(userHi, msgTools)))
	is.Equal(rec.Code, 200)
	res, err := anthropicsse.CheckMessage(rec.Body.Bytes())
	is.NoErr(err)
	is.Equal(res.StopReason, "tool_use")
	is.Equal(len(res.ToolUses()), 1)
	is.Equal(string(res.ToolUses()[0].Input), `{"path":"a.go"}`)
}

func TestMessagesEnforcesStopSequences(t *testing.T) {
	cases := map[string][]any{
		"inside one delta":   {app.Delta{Text: "yes</block> and more"}},
		"split across delta": {app.Delta{Text: "yes</bl"}, app.Delta{Text: "ock> and more"}},
		"split in three":     {app.Delta{Text: "yes<"}, app.Delta{Text: "/blo"}, app.Delta{Text: "ck>"}, app.Delta{Text: " more"}},
	}
	for name, steps := range cases {
		steps = append(steps, app.Delta{Finish: app.FinishStop})
		t.Run(name+"/stream", func(t *testing.T) {
			is := is.New(t)
			h, _ := newServer(t, returning(script(steps...), nil))
			rec := serve(h, msgRequest(msgBody(userHi, `,"stream":true,"stop_sequences":["</block>","NEVER"]`)))
			res, err := anthropicsse.CheckSuccess(rec.Body.Bytes())
			is.NoErr(err)
			is.Equal(res.StopReason, "stop_sequence")
			is.Equal(*res.StopSequence, "</block>")
			is.Equal(res.Text(), "yes") // cut before the sequence
		})
		t.Run(name+"/json", func(t *testing.T) {
			is := is.New(t)
			h, _ := newServer(t, returning(script(steps...), nil))
			rec := serve(h, msgRequest(msgBody(userHi, `,"stop_sequences":["</block>"]`)))
			res, err := anthropicsse.CheckMessage(rec.Body.Bytes())
			is.NoErr(err)
			is.Equal(res.StopReason, "stop_sequence")
			is.Equal(*res.StopSequence, "</block>")
			is.Equal(res.Text(), "yes")
		})
	}
	t.Run("no match releases the held tail", func(t *testing.T) {
		is := is.New(t)
		h, _ := newServer(t, returning(script(app.Delta{Text: "ends with </blo"}, app.Delta{Finish: app.FinishStop}), nil))
		rec := serve(h, msgRequest(msgBody(userHi, `,"stream":true,"stop_sequences":["</block>"]`)))
		res, err := anthropicsse.CheckSuccess(rec.Body.Bytes())
		is.NoErr(err)
		is.Equal(res.StopReason, "end_turn")
		is.Equal(res.Text(), "ends with </blo")
	})
	t.Run("the earliest to complete wins", func(t *testing.T) {
		is := is.New(t)
		h, _ := newServer(t, returning(script(app.Delta{Text: "abcdef"}, app.Delta{Finish: app.FinishStop}), nil))
		rec := serve(h, msgRequest(msgBody(userHi, `,"stop_sequences":["bcdef","cd"]`)))
		res, err := anthropicsse.CheckMessage(rec.Body.Bytes())
		is.NoErr(err)
		is.Equal(*res.StopSequence, "cd")
		is.Equal(res.Text(), "ab")
	})
	t.Run("a failure after the cut is still an error", func(t *testing.T) {
		is := is.New(t)
		h, _ := newServer(t, returning(script(app.Delta{Text: "x</block>y"}, errs.New(errs.UpstreamIncompleteStream)), nil))
		rec := serve(h, msgRequest(msgBody(userHi, `,"stream":true,"stop_sequences":["</block>"]`)))
		res, err := anthropicsse.CheckFailed(rec.Body.Bytes())
		is.NoErr(err) // no message_stop without the proven end
		is.Equal(res.Error.Type, "api_error")
	})
}

func TestMessagesStreamFailureAfterHeadersIsOneErrorEvent(t *testing.T) {
	for _, code := range []errs.Code{errs.UpstreamFailure, errs.UpstreamIncompleteStream, errs.UpstreamCompletionAmbiguous,
		errs.UpstreamTimeout, errs.UpstreamUnverifiedEventShape} {
		t.Run(string(code), func(t *testing.T) {
			is := is.New(t)
			h, _ := newServer(t, returning(script(app.Delta{Text: "partial"}, errs.New(code)), nil))
			rec := serve(h, msgRequest(msgBody(userHi, `,"stream":true`)))
			is.Equal(rec.Code, 200)
			res, err := anthropicsse.CheckFailed(rec.Body.Bytes())
			is.NoErr(err)
			body := rec.Body.String()
			is.True(strings.HasSuffix(body, "\n\n"))
			is.Equal(strings.Count(body, "event: error\n"), 1)
			is.True(!strings.Contains(body, "message_delta"))
			is.True(!strings.Contains(body, "message_stop"))
			var raw map[string]any
			is.NoErr(json.Unmarshal(res.Raw, &raw))
			is.Equal(raw["error"].(map[string]any)["code"], string(code)) // the stable code in the frame
		})
	}
}

func TestMessagesNeverAnswersAnEmptyEndTurn(t *testing.T) {
	for _, stream := range []string{"true", "false"} {
		t.Run(stream, func(t *testing.T) {
			is := is.New(t)
			h, _ := newServer(t, returning(script(app.Delta{Finish: app.FinishStop}), nil))
			rec := serve(h, msgRequest(msgBody(userHi, `,"stream":`+stream)))
			is.Equal(rec.Code, 500) // upstream_empty_stream (502) as Anthropic's api_error
			e := decodeAnth(t, rec.Body.Bytes())
			is.Equal(e.Error.Code, "upstream_empty_stream")
		})
	}
}

func TestMessagesStreamPingsDuringLongSilences(t *testing.T) {
	is := is.New(t)
	// The silence lasts until a ping has gone out, not for a fixed time a
	// loaded machine may not fire the timer in (a stream that never pings
	// fails at the request timeout).
	rec := &pingRecorder{ResponseRecorder: httptest.NewRecorder(), pinged: make(chan struct{})}
	i := 0
	turn := newTurn(func(ctx context.Context) (app.Delta, error) {
		i++
		switch i {
		case 1:
			return app.Delta{Text: "thinking about it"}, nil
		case 2:
			select {
			case <-rec.pinged:
			case <-ctx.Done():
				return app.Delta{}, ctx.Err()
			}
			return app.Delta{Text: "."}, nil
		case 3:
			return app.Delta{Finish: app.FinishStop}, nil
		}
		return app.Delta{}, io.EOF
	})
	h, _ := newServer(t, returning(turn, nil), func(c *httpapi.Config) { c.MessagesPingInterval = 5 * time.Millisecond })
	h.ServeHTTP(rec, msgRequest(msgBody(userHi, `,"stream":true`)))
	res, err := anthropicsse.CheckSuccess(rec.Body.Bytes())
	is.NoErr(err)
	pings := 0
	for _, e := range res.Events {
		if e == "ping" {
			pings++
		}
	}
	is.True(pings > 0) // the silence was filled with ping events
	is.Equal(res.Text(), "thinking about it.")
}

// TestMessagesStreamPingTimerFiringAtOnceIsSafe: a ping interval so short
// that the timer fires before the handler has finished arming it (a loaded
// machine delays the handler the same way) neither crashes the gateway nor
// changes the answer.
func TestMessagesStreamPingTimerFiringAtOnceIsSafe(t *testing.T) {
	is := is.New(t)
	for range 300 {
		turn := script(app.Delta{Text: "hello"}, app.Delta{Finish: app.FinishStop})
		h, _ := newServer(t, returning(turn, nil), func(c *httpapi.Config) { c.MessagesPingInterval = time.Nanosecond })
		rec := serve(h, msgRequest(msgBody(userHi, `,"stream":true`)))
		res, err := anthropicsse.CheckSuccess(rec.Body.Bytes())
		is.NoErr(err)
		is.Equal(res.Text(), "hello")
	}
}

// pingRecorder is a ResponseRecorder that closes pinged at the first write
// of a ping event.
type pingRecorder struct {
	*httptest.ResponseRecorder
	once   sync.Once
	pinged chan struct{}
}

func (p *pingRecorder) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("event: ping")) {
		p.once.Do(func() { close(p.pinged) })
	}
	return p.ResponseRecorder.Write(b)
}
