package app

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
)

// cancelMovedPast cancels the PENDING groups of p that this request's
// conversation moved past: it shows every call of the group in its history
// and answers none of them (correlation.MovedPastBy; row C28). Nobody will
// continue such a group, so its room in p's share and in the store is freed
// before this request's own turn asks for room. It runs for every request
// of a principal, fresh or continued, and only looks at the store when the
// request shows a call it does not answer: an agent loop that answers every
// call costs nothing here.
//
// Only p's groups are found (the lookup is by principal and public id), a
// group whose results this request carries is never touched (its
// continuation, complete or not, and a re-sent one, follow their own rules),
// and a group in any state but PENDING is left as it is. A failure of the
// store is logged: the turn goes on, and decides on room as before.
func (g *Gateway) cancelMovedPast(ctx context.Context, p Principal, msgs []chat.Message) {
	ids := correlation.Unanswered(msgs)
	if len(ids) == 0 {
		return
	}
	keys, err := g.store.Resolve(ctx, p.ID, ids)
	if err != nil {
		g.log.WarnContext(ctx, "moved-past groups not looked up", "code", errs.CodeOf(err))
		return
	}
	if len(keys) == 0 {
		return
	}
	unanswered := make(map[string]bool, len(ids))
	for _, id := range ids {
		unanswered[id] = true
	}
	done := map[string]bool{}
	for _, id := range ids {
		key, ok := keys[id]
		if !ok || done[key] {
			continue
		}
		done[key] = true
		d, err := g.store.Update(ctx, key, func(gr *correlation.Group) (correlation.Decision, error) {
			return gr.MovedPast(g.clock.Now(), g.cfg.Policy, unanswered)
		})
		switch {
		case err == nil:
			g.logDecision(ctx, p, d)
		case errors.Is(err, correlation.ErrNotMovedPast), errors.Is(err, correlation.ErrIllegalTransition),
			errs.Has(err, errs.UnknownToolCall):
			// not moved past, no longer PENDING, or gone: nothing to do
		default:
			g.log.WarnContext(ctx, "moved-past group not cancelled", "code", errs.CodeOf(err))
		}
	}
}
