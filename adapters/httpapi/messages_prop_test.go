package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/internal/anthropicsse"
)

// Any turn the app can produce — text in any pieces, tool calls in any
// fragments, a failure anywhere, stop sequences — renders as a stream the
// strict checker accepts, with the outcome the turn proved: success only
// after the proven end (with the reference text cut and the right stop
// reason), else one error frame (or a plain error before any output).
func TestMessagesStreamsAreGrammaticalForAnyTurn(t *testing.T) {
	var current app.Turn // the turn of the running check (checks run one at a time)
	h, _ := newServer(t, &fakeService{ChatFn: func(context.Context, app.Principal, chat.Request) (app.Turn, error) { return current, nil }})
	rapid.Check(t, func(t *rapid.T) {
		piece := rapid.SampledFrom([]string{"a", "b", "<", "/", ">", "é", "\n", "ab", "</x>", ""})
		texts := rapid.SliceOfN(piece, 0, 6).Draw(t, "texts")
		ncalls := rapid.IntRange(0, 2).Draw(t, "calls")
		failAt := rapid.IntRange(-1, len(texts)+ncalls).Draw(t, "failAt") // -1: no failure
		stops := rapid.SliceOfN(rapid.SampledFrom([]string{"</x>", "b<", "zz"}), 0, 2).Draw(t, "stops")
		stream := rapid.Bool().Draw(t, "stream")

		var steps []any
		for _, x := range texts {
			steps = append(steps, app.Delta{Text: x})
		}
		for i := 0; i < ncalls; i++ {
			id := fmt.Sprintf("toolu_pmn_%d", i)
			steps = append(steps, app.Delta{ToolCall: &app.ToolCallDelta{Index: i, ID: id, Name: "Read", Arguments: `{"path":`}},
				app.Delta{ToolCall: &app.ToolCallDelta{Index: i, Arguments: `"f"}`}})
		}
		failed := failAt >= 0
		if failed {
			cut := min(failAt, len(steps))
			steps = append(steps[:cut:cut], errs.New(errs.UpstreamIncompleteStream))
		} else if ncalls > 0 {
			steps = append(steps, app.Delta{Finish: app.FinishToolCalls})
		} else {
			steps = append(steps, app.Delta{Finish: app.FinishStop})
		}
		current = script(steps...)
		stopJSON := ""
		if len(stops) > 0 {
			stopJSON = `,"stop_sequences":["` + strings.Join(stops, `","`) + `"]`
		}
		rec := serve(h, msgRequest(msgBody(userHi, fmt.Sprintf(`,"stream":%v`, stream)+stopJSON+msgTools)))
		full := strings.Join(texts, "")
		nothing := full == "" && ncalls == 0
		if rec.Code != 200 {
			if _, err := anthropicsse.CheckError(rec.Code, rec.Body.Bytes()); err != nil {
				t.Fatalf("error body: %v", err)
			}
			if !failed && !nothing {
				t.Fatalf("a proven turn answered %d: %s", rec.Code, rec.Body.String())
			}
			return
		}
		var res anthropicsse.Result
		var err error
		if stream {
			res, err = anthropicsse.Check(rec.Body.Bytes())
		} else {
			res, err = anthropicsse.CheckMessage(rec.Body.Bytes())
		}
		if err != nil {
			t.Fatalf("grammar: %v\n%s", err, rec.Body.String())
		}
		if failed {
			if res.Outcome != anthropicsse.Failed {
				t.Fatalf("a failed turn succeeded:\n%s", rec.Body.String())
			}
			return
		}
		if res.Outcome != anthropicsse.Success {
			t.Fatalf("a proven turn failed:\n%s", rec.Body.String())
		}
		want, seq := full, ""
		best := -1
		for _, s := range stops {
			if i := strings.Index(full, s); i >= 0 && (best < 0 || i+len(s) < best) {
				best, want, seq = i+len(s), full[:i], s
			}
		}
		if res.Text() != want {
			t.Fatalf("text %q, want %q", res.Text(), want)
		}
		switch {
		case seq != "":
			if res.StopReason != "stop_sequence" || *res.StopSequence != seq || len(res.ToolUses()) != 0 {
				t.Fatalf("stop %q %v with %d tools, want the sequence %q", res.StopReason, res.StopSequence, len(res.ToolUses()), seq)
			}
		case ncalls > 0:
			if res.StopReason != "tool_use" || len(res.ToolUses()) != ncalls {
				t.Fatalf("stop %q with %d tools, want tool_use with %d", res.StopReason, len(res.ToolUses()), ncalls)
			}
		default:
			if res.StopReason != "end_turn" {
				t.Fatalf("stop %q, want end_turn", res.StopReason)
			}
		}
	})
}
