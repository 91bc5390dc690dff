package httpapi

import (
	"net/http"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/msgapi"
	"github.com/pmgate/pmgate/domain/chat"
)

// agentHeader names a Claude Code subagent: its requests carry a fresh id
// per spawn, and its conversations must never continue another agent's.
const agentHeader = "x-claude-code-agent-id"

// handleMessages serves POST /v1/messages: one turn (serveTurn) of the
// request translated from the Messages API (msgapi.Decode), rendered as a
// Message or the Messages event stream (msgapi.Answer).
func (s *server) handleMessages(w http.ResponseWriter, r *http.Request) (turnFacts, error) {
	if agent := r.Header.Get(agentHeader); agent != "" {
		r = r.WithContext(scopePrincipal(r.Context(), "agent:"+agent))
	}
	return serveTurn(s, w, r, "messages", func(body []byte) (*msgapi.Request, chat.Request, error) {
		mr, err := msgapi.Decode(s.in, body, slotFrom(r.Context()).allowsModel)
		if err != nil {
			return nil, chat.Request{}, err
		}
		return &mr, mr.Chat, nil
	}, func(w http.ResponseWriter, r *http.Request, mr *msgapi.Request, tr *answer.Reader) error {
		return msgapi.Answer(w, r.Context(), mr, tr, msgapi.Env{EstimatesOff: s.cfg.UsageEstimatesOff,
			PingInterval: s.cfg.MessagesPingInterval, Fail: anthropicStreamFailure})
	})
}

// handleCountTokens serves POST /v1/messages/count_tokens: the gateway's
// input estimate of the request (msgapi.AnswerCount). With estimates off
// there is nothing honest to count: 404, and Claude Code estimates locally.
func (s *server) handleCountTokens(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.UsageEstimatesOff {
		return errNoRoute
	}
	body, err := s.readJSON(w, r)
	if err != nil {
		return err
	}
	mr, err := msgapi.DecodeCount(s.in, body, slotFrom(r.Context()).allowsModel)
	if err != nil {
		return err
	}
	return msgapi.AnswerCount(w, &mr)
}
