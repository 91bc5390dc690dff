package httpapi

// This file is the transport of POST /v1/chat/completions: its translation
// and its answer are package chatapi's.

import (
	"net/http"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/chatapi"
	"github.com/pmgate/pmgate/domain/chat"
)

// handleChat serves POST /v1/chat/completions: one turn (serveTurn) of the
// request rendered as a chat completion, JSON or SSE. A failure after the
// stream's headers is the OpenAI error body (openAIStreamFailure).
func (s *server) handleChat(w http.ResponseWriter, r *http.Request) (turnFacts, error) {
	return serveTurn(s, w, r, "messages", func(body []byte) (chat.Request, chat.Request, error) {
		req, err := chatapi.Decode(s.in, body, slotFrom(r.Context()).allowsModel)
		return req, req, err
	}, func(w http.ResponseWriter, r *http.Request, req chat.Request, tr *answer.Reader) error {
		return chatapi.Answer(w, r.Context(), req, tr, chatapi.Env{Now: s.now(), EstimatesOff: s.cfg.UsageEstimatesOff,
			Fail: openAIStreamFailure})
	})
}
