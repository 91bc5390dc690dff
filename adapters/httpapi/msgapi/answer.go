package msgapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/msgsse"
	"github.com/pmgate/pmgate/domain/chat"
)

// Env is what an answer needs from the transport for one request.
type Env struct {
	// EstimatesOff: no usage estimates (only the upstream's counts are shown).
	EstimatesOff bool
	// PingInterval is how often a silent stream sends a ping event (0 or
	// less: DefaultPingInterval).
	PingInterval time.Duration
	// Fail renders a failure after a stream's headers in the Anthropic error
	// shape (the error object and the request id of the event: error).
	Fail func(ctx context.Context, err error) (errObj any, requestID string)
}

// Answer renders the turn tr of req as a Message or, when req asked for a
// stream, the Messages event stream. A failure is returned: before anything
// was written for the route's writer, after (in the stream) to be noted.
func Answer(w http.ResponseWriter, ctx context.Context, req *Request, tr *answer.Reader, env Env) error {
	o := msgOutput{req: req, id: "msg_" + answer.RandText()}
	if req.Chat.Stream {
		return streamMessage(w, ctx, o, tr, env)
	}
	return completeMessage(w, ctx, o, tr, env)
}

// AnswerCount answers count_tokens: the gateway's input estimate of the
// request (the formula of the usage estimates, which errs high), never 0.
func AnswerCount(w http.ResponseWriter, req *Request) error {
	w.Header().Set(answer.UsageHeader, "estimated")
	return answer.WriteValue(w, map[string]int64{"input_tokens": max(req.estimate, 1)}, "count tokens")
}

// msgOutput is what a Message needs besides the turn.
type msgOutput struct {
	req *Request
	id  string
}

func msgUsageOf(u *chat.Usage) msgsse.Usage {
	var m msgsse.Usage
	if u != nil {
		if u.PromptTokens != nil {
			m.InputTokens = *u.PromptTokens
		}
		if u.CompletionTokens != nil {
			m.OutputTokens = *u.CompletionTokens
		}
	}
	return m
}

// completeMessage collects the whole turn and writes one Message; any
// failure before the proven end is a plain error with its status.
func completeMessage(w http.ResponseWriter, ctx context.Context, o msgOutput, tr *answer.Reader, env Env) error {
	all, err := answer.Collect(ctx, tr)
	if err != nil {
		return err
	}
	if all.Text == "" && len(all.Calls) == 0 {
		return answer.ErrNothingProven()
	}
	sc := answer.NewStopScanner(o.req.stops)
	text := sc.Feed(all.Text) + sc.Flush()
	var content []json.RawMessage
	if text != "" {
		content = append(content, rules.MustJSON(msgsse.TextBlock{Type: "text", Text: text}))
	}
	uses := 0
	if sc.Matched == nil {
		for _, c := range all.Calls {
			content = append(content, rules.MustJSON(msgsse.ToolUseBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: answer.ToolInput(c.Arguments)}))
			uses++
		}
	}
	if content == nil {
		content = []json.RawMessage{}
	}
	reason := msgsse.StopReason(sc.Matched, uses)
	u := tr.Usage(o.req.Chat, env.EstimatesOff, w.Header())
	return answer.WriteValue(w, msgsse.Message{ID: o.id, Type: "message", Role: "assistant", Model: o.req.Chat.Model, Content: content,
		StopReason: &reason, StopSequence: sc.Matched, Usage: msgUsageOf(u)}, "encode message")
}
