package httpapi

import (
	"net/http"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
)

// apiOf names the API of a chat route for the ledger.
func apiOf(path string) string {
	switch path {
	case pathChat:
		return usage.APIChat
	case pathResponses:
		return usage.APIResponses
	}
	if geminiRouteOf(path) != "" {
		return usage.APIGemini
	}
	return usage.APIMessages
}

// recordUsage counts one finished request of a turn route, which the key
// slot sent and which was answered with code ("" when it succeeded): in the
// ledger (Config.Usage) and in the per-slot metrics.
func (s *server) recordUsage(r *http.Request, f turnFacts, slot string, code errs.Code) {
	m := f.summary
	outcome := string(code)
	if outcome == "" {
		outcome = "ok"
	}
	if mon := s.cfg.Monitor; mon != nil {
		mon.ObserveSlot(slot, m.Dispatches, code)
	}
	if s.cfg.Usage == nil || slot == "" {
		return
	}
	e := usage.Entry{At: f.start, Slot: slot, API: apiOf(r.URL.Path), Model: f.model, Strategy: s.cfg.Strategy,
		Outcome: outcome, Dispatches: m.Dispatches, QueryChars: m.QueryChars, OutputChars: m.OutputChars,
		Duration: s.now().Sub(f.start)}
	if u := m.Usage; u != nil {
		e.Reported = true
		if u.PromptTokens != nil {
			e.PromptTokens = *u.PromptTokens
		}
		if u.CompletionTokens != nil {
			e.CompletionTokens = *u.CompletionTokens
		}
	}
	s.cfg.Usage.Record(e)
}
