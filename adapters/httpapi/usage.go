package httpapi

import (
	"net/http"
	"time"

	"github.com/pmgate/pmgate/app"
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

// recordUsage counts one finished chat request: in the ledger (Config.Usage)
// and in the per-slot metrics.
func (s *server) recordUsage(r *http.Request, m app.Summary, start time.Time) {
	ri := infoFrom(r.Context())
	ri.notes = m.Notes
	outcome := string(ri.code)
	if outcome == "" {
		outcome = "ok"
	}
	if mon := s.cfg.Monitor; mon != nil {
		mon.ObserveSlot(ri.slot, m.Dispatches, ri.code)
	}
	if s.cfg.Usage == nil || ri.slot == "" {
		return
	}
	e := usage.Entry{At: start, Slot: ri.slot, API: apiOf(r.URL.Path), Model: ri.model, Strategy: s.cfg.Strategy,
		Outcome: outcome, Dispatches: m.Dispatches, QueryChars: m.QueryChars, OutputChars: m.OutputChars,
		Duration: s.now().Sub(start)}
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
