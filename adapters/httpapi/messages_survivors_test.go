package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/internal/anthropicsse"
)

// The Messages rules a mutation run showed no test held (issue 35), each
// pinned at its edge.

// sseEvent is one event of a Messages stream: its name and data object.
type sseEvent struct {
	name string
	data map[string]any
}

// sseEvents splits a Messages stream into its events.
func sseEvents(t *testing.T, body string) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, frame := range strings.Split(body, "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(frame, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				ev.name = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				if err := json.Unmarshal([]byte(v), &ev.data); err != nil {
					t.Fatalf("data of %q is not JSON: %v", ev.name, err)
				}
			}
		}
		if ev.name != "" {
			out = append(out, ev)
		}
	}
	return out
}

// stopList is a stop_sequences array of n distinct sequences.
func stopList(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = `"STOP` + strconv.Itoa(i) + `"`
	}
	return `[` + strings.Join(s, ",") + `]`
}

func TestMessagesAcceptsSixteenStopSequencesAndRefusesSeventeen(t *testing.T) {
	is := is.New(t)
	svc := returning(script(app.Delta{Text: "ok"}, app.Delta{Finish: app.FinishStop}), nil)
	h, _ := newServer(t, svc)
	rec := serve(h, msgRequest(msgBody(userHi, `,"stop_sequences":`+stopList(16))))
	is.Equal(rec.Code, 200) // the documented maximum is accepted
	is.Equal(svc.Calls(), 1)

	rec = serve(h, msgRequest(msgBody(userHi, `,"stop_sequences":`+stopList(17))))
	is.Equal(rec.Code, 400) // one more is refused
	e := decodeAnth(t, rec.Body.Bytes())
	is.Equal(e.Error.Code, "invalid_request")
	is.True(e.Error.Param != nil)
	is.Equal(*e.Error.Param, "stop_sequences")
	is.Equal(svc.Calls(), 1) // and never reaches the service
}

func TestMessagesDisableParallelToolUseTurnsParallelCallsOff(t *testing.T) {
	for name, c := range map[string]struct {
		extra    string
		parallel bool
	}{
		"no tool_choice":         {"", true}, // the strategy decides (chat.Request: the client allows)
		"auto":                   {`,"tool_choice":{"type":"auto"}`, true},
		"none":                   {`,"tool_choice":{"type":"none"}`, true},
		"disable false":          {`,"tool_choice":{"type":"auto","disable_parallel_tool_use":false}`, true},
		"disable true":           {`,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`, false},
		"disable true with none": {`,"tool_choice":{"type":"none","disable_parallel_tool_use":true}`, false},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			svc := returning(script(app.Delta{Text: "ok"}, app.Delta{Finish: app.FinishStop}), nil)
			h, _ := newServer(t, svc)
			rec := serve(h, msgRequest(msgBody(userHi, msgTools+c.extra)))
			is.Equal(rec.Code, 200)
			_, req := svc.Last()
			is.Equal(req.ParallelToolCalls, c.parallel)
		})
	}
}

// A stop sequence split across two upstream deltas at any position, and
// across one delta per character, is cut before any of it is shown: the
// stream's text is exactly what precedes it, for sequences of one to several
// bytes, multi-byte characters included, and beside a longer sequence that
// never matches.
func TestMessagesNeverLeaksAStopSequenceSplitAnywhere(t *testing.T) {
	for _, c := range []struct{ stop, other string }{
		{"</block>", ""},
		{"ab", ""},
		{"é>", ""},
		{"\n\nHuman:", "NEVER-MATCHES-THIS"},
		{"END", "x"},
	} {
		full := "before" + c.stop + "after"
		stops, _ := json.Marshal([]string{c.stop})
		if c.other != "" {
			stops, _ = json.Marshal([]string{c.other, c.stop})
		}
		var splits [][]string
		var each []string // one delta per character
		for i, r := range full {
			if i > 0 {
				splits = append(splits, []string{full[:i], full[i:]})
			}
			each = append(each, string(r))
		}
		splits = append(splits, each)
		for _, pieces := range splits {
			steps := make([]any, 0, len(pieces)+1)
			for _, p := range pieces {
				steps = append(steps, app.Delta{Text: p})
			}
			steps = append(steps, app.Delta{Finish: app.FinishStop})
			h, _ := newServer(t, returning(script(steps...), nil))
			rec := serve(h, msgRequest(msgBody(userHi, `,"stream":true,"stop_sequences":`+string(stops))))
			var shown strings.Builder
			for _, ev := range sseEvents(t, rec.Body.String()) {
				if d, ok := ev.data["delta"].(map[string]any); ok && d["type"] == "text_delta" {
					shown.WriteString(d["text"].(string))
				}
			}
			if shown.String() != "before" {
				t.Fatalf("stop %q, deltas %q: the stream showed %q, want %q", c.stop, pieces, shown.String(), "before")
			}
		}
	}
}

func TestAMessageCutByAStopSequenceCarriesNoToolUse(t *testing.T) {
	is := is.New(t)
	svc := returning(script(app.Delta{Text: "yes</block> and a call"},
		toolDelta(0, "toolu_pmn_a", "Read", `{"path":"a.go"}`), app.Delta{Finish: app.FinishToolCalls}), nil)
	h, _ := newServer(t, svc)
	rec := serve(h, msgRequest(msgBody(userHi, `,"stop_sequences":["</block>"]`+msgTools)))
	is.Equal(rec.Code, 200)
	res, err := anthropicsse.CheckMessage(rec.Body.Bytes())
	is.NoErr(err)
	is.Equal(res.StopReason, "stop_sequence")
	is.Equal(res.Text(), "yes")
	is.Equal(len(res.ToolUses()), 0) // generation stopped at the sequence: the calls after it never happened
	is.True(!strings.Contains(rec.Body.String(), "tool_use"))
}

// Every tool_use block whose call had no arguments gets the
// input_json_delta "{}" (some clients parse only the deltas): in the
// middle of the turn and as its last block.
func TestMessagesEveryArgumentlessToolUseGetsItsEmptyObject(t *testing.T) {
	for name, steps := range map[string][]any{
		"last":         {toolDelta(0, "toolu_pmn_a", "Read", `{"path":"a.go"}`), toolDelta(1, "toolu_pmn_b", "Read", "")},
		"only":         {toolDelta(0, "toolu_pmn_a", "Read", "")},
		"first":        {toolDelta(0, "toolu_pmn_a", "Read", ""), toolDelta(1, "toolu_pmn_b", "Read", `{"path":"b.go"}`)},
		"after a text": {app.Delta{Text: "Looking."}, toolDelta(0, "toolu_pmn_a", "Read", "")},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			steps = append(steps, app.Delta{Finish: app.FinishToolCalls})
			h, _ := newServer(t, returning(script(steps...), nil))
			rec := serve(h, msgRequest(msgBody(userHi, `,"stream":true`+msgTools)))
			_, err := anthropicsse.CheckSuccess(rec.Body.Bytes())
			is.NoErr(err)
			partial := map[float64]string{} // block index → its concatenated input_json_delta
			uses := map[float64]bool{}
			for _, ev := range sseEvents(t, rec.Body.String()) {
				idx, _ := ev.data["index"].(float64)
				if b, ok := ev.data["content_block"].(map[string]any); ok && b["type"] == "tool_use" {
					uses[idx] = true
				}
				if d, ok := ev.data["delta"].(map[string]any); ok && d["type"] == "input_json_delta" {
					partial[idx] += d["partial_json"].(string)
				}
			}
			is.True(len(uses) > 0)
			for idx := range uses {
				var in map[string]any
				is.NoErr(json.Unmarshal([]byte(partial[idx]), &in)) // the deltas of block idx make an object
			}
		})
	}
}

// message_delta's usage is cumulative: when the upstream counts fewer input
// tokens than the estimate message_start gave, the input count is left out
// rather than reported smaller.
func TestMessageDeltaNeverReportsFewerInputTokensThanMessageStart(t *testing.T) {
	is := is.New(t)
	u := &chat.Usage{PromptTokens: i64(1), CompletionTokens: i64(3)}
	h, _ := newServer(t, returning(script(app.Delta{Text: "abc"}, app.Delta{Finish: app.FinishStop, Usage: u}), nil))
	long := `[{"role":"user","content":"` + strings.Repeat("many words here ", 50) + `"}]`
	rec := serve(h, msgRequest(msgBody(long, `,"stream":true`)))
	_, err := anthropicsse.CheckSuccess(rec.Body.Bytes())
	is.NoErr(err) // the validator refuses an input count that goes down
	var start, end map[string]any
	for _, ev := range sseEvents(t, rec.Body.String()) {
		switch ev.name {
		case "message_start":
			start = ev.data["message"].(map[string]any)["usage"].(map[string]any)
		case "message_delta":
			end = ev.data["usage"].(map[string]any)
		}
	}
	is.True(start["input_tokens"].(float64) > 1) // the estimate exceeds the upstream's count
	if in, ok := end["input_tokens"]; ok {
		is.True(in.(float64) >= start["input_tokens"].(float64))
	}
	is.Equal(end["output_tokens"], float64(3))

	// A larger upstream count is reported.
	u = &chat.Usage{PromptTokens: i64(100000), CompletionTokens: i64(3)}
	h, _ = newServer(t, returning(script(app.Delta{Text: "abc"}, app.Delta{Finish: app.FinishStop, Usage: u}), nil))
	rec = serve(h, msgRequest(msgBody(long, `,"stream":true`)))
	res, err := anthropicsse.CheckSuccess(rec.Body.Bytes())
	is.NoErr(err)
	is.Equal(res.InputTokens, int64(100000))
}

func TestCountTokensRequiresAnAPIKey(t *testing.T) {
	body := `{"model":"` + model + `","messages":` + userHi + `}`
	for name, c := range map[string]struct {
		header, value string
		status        int
	}{
		"no key":     {"", "", 401},
		"wrong key":  {"x-api-key", "sk-wrong", 401},
		"x-api-key":  {"x-api-key", apiKey, 200},
		"bearer key": {"Authorization", "Bearer " + apiKey, 200},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			h, _ := newServer(t, &fakeService{})
			r := httptest.NewRequest(http.MethodPost, "/v1/messages/count_tokens?beta=true", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			if c.header != "" {
				r.Header.Set(c.header, c.value)
			}
			rec := serve(h, r)
			is.Equal(rec.Code, c.status)
			if c.status == 401 {
				e := decodeAnth(t, rec.Body.Bytes())
				is.Equal(e.Error.Type, "authentication_error") // in the Anthropic shape
				is.True(!strings.Contains(rec.Body.String(), "input_tokens"))
			}
		})
	}
}
