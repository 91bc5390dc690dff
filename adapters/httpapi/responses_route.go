package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/respapi"
	"github.com/pmgate/pmgate/domain/chat"
)

// handleResponses serves POST /v1/responses: one turn (serveTurn) of the
// request translated from the Responses API (respapi.Decode), rendered as a
// response object or the Responses event stream (respapi.Answer).
func (s *server) handleResponses(w http.ResponseWriter, r *http.Request) (turnFacts, error) {
	return serveTurn(s, w, r, "input", func(body []byte) (*respapi.Request, chat.Request, error) {
		rr, err := respapi.Decode(s.in, body, slotFrom(r.Context()).allowsModel)
		if err != nil {
			return nil, chat.Request{}, err
		}
		if dropped := rr.Dropped(); len(dropped) > 0 {
			// Hosted tools the upstream cannot run are left out, not
			// refused; the response's "tools" lists only what was offered.
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "responses: built-in tools not offered upstream",
				slog.Any("tool_types", dropped))
		}
		return &rr, rr.Chat, nil
	}, func(w http.ResponseWriter, r *http.Request, rr *respapi.Request, tr *answer.Reader) error {
		return respapi.Answer(w, r.Context(), rr, tr, respapi.Env{Now: s.now(), UsageEstimatesOff: s.cfg.UsageEstimatesOff,
			Fail: responsesStreamFailure})
	})
}
