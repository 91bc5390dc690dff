package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/msgsse"
	"github.com/pmgate/pmgate/domain/chat"
)

// agentHeader names a Claude Code subagent: its requests carry a fresh id
// per spawn, and its conversations must never continue another agent's.
const agentHeader = "x-claude-code-agent-id"

// handleMessages serves POST /v1/messages: one turn (serveTurn) of the
// request translated from the Messages API, rendered as a Message or the
// Messages event stream.
func (s *server) handleMessages(w http.ResponseWriter, r *http.Request) error {
	if agent := r.Header.Get(agentHeader); agent != "" {
		r = r.WithContext(scopePrincipal(r.Context(), "agent:"+agent))
	}
	return serveTurn(s, w, r, "messages", func(body []byte) (*msgRequest, chat.Request, error) {
		mr, err := s.decodeMessagesRequest(body, slotFrom(r.Context()).allowsModel)
		if err != nil {
			return nil, chat.Request{}, err
		}
		return &mr, mr.chat, nil
	}, func(w http.ResponseWriter, r *http.Request, mr *msgRequest, tr *answer.Reader) error {
		o := msgOutput{req: mr, id: "msg_" + answer.RandText()}
		if mr.chat.Stream {
			return s.streamMessage(w, r, o, tr)
		}
		return s.completeMessage(w, r, o, tr)
	})
}

// handleCountTokens serves POST /v1/messages/count_tokens: the gateway's
// input estimate of the request (the formula of the usage estimates, which
// errs high), never 0. With estimates off there is nothing honest to count:
// 404, and Claude Code estimates locally.
func (s *server) handleCountTokens(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.UsageEstimatesOff {
		return errNoRoute
	}
	body, err := s.readJSON(w, r)
	if err != nil {
		return err
	}
	mr, err := s.decodeCountRequest(body, slotFrom(r.Context()).allowsModel)
	if err != nil {
		return err
	}
	w.Header().Set(answer.UsageHeader, "estimated")
	return writeValue(w, map[string]int64{"input_tokens": max(mr.estimate, 1)}, "count tokens")
}

// msgOutput is what a Message needs besides the turn.
type msgOutput struct {
	req *msgRequest
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
func (s *server) completeMessage(w http.ResponseWriter, r *http.Request, o msgOutput, tr *answer.Reader) error {
	all, err := answer.Collect(r.Context(), tr)
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
	u := tr.Usage(o.req.chat, s.cfg.UsageEstimatesOff, w.Header())
	return writeValue(w, msgsse.Message{ID: o.id, Type: "message", Role: "assistant", Model: o.req.chat.Model, Content: content,
		StopReason: &reason, StopSequence: sc.Matched, Usage: msgUsageOf(u)}, "encode message")
}
