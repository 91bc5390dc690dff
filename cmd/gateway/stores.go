package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/adapters/pgstore"
	"github.com/pmgate/pmgate/adapters/system"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// store is the correlation store of a running gateway: the port plus the
// process-level operations both adapters provide.
type store interface {
	ports.CorrelationStore
	Run(ctx context.Context, every time.Duration, clock ports.Clock, log *slog.Logger, onSweep func(correlation.SweepReport))
	Shutdown(now time.Time) (cancelled int, counts correlation.Counts)
	Close()
}

// memoryStore adapts memstore (which needs no Close) to store.
type memoryStore struct{ *memstore.Store }

func (memoryStore) Close() {}

// openStore opens the configured correlation store. The memory store cancels
// its pending groups on shutdown; the PostgreSQL store leaves them to the other
// replicas.
func openStore(ctx context.Context, cfg config, log *slog.Logger) (store, error) {
	if cfg.store == "postgres" {
		return pgstore.Open(ctx, cfg.postgresURL, cfg.limits, cfg.policy, log)
	}
	return memoryStore{memstore.New(cfg.limits, cfg.policy)}, nil
}

// anchorStore is the conversation anchor store of a running gateway.
type anchorStore = ports.AnchorStore

// sweepAnchors applies time to the anchors every interval until ctx ends
// (several replicas may sweep one database at once: they take disjoint rows).
// A failing sweep is logged when it starts and stops failing, not every tick.
func sweepAnchors(ctx context.Context, st anchorStore, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rep, err := st.Sweep(ctx, system.Clock{}.Now())
			switch {
			case err != nil && ctx.Err() != nil:
				return
			case err != nil && !failing:
				log.Warn("conversation sweep failed", "code", string(errs.CodeOf(err)))
			case err == nil && rep.Expired+rep.Retired+rep.Removed > 0:
				log.Info("conversation sweep", "expired", rep.Expired, "retired", rep.Retired, "removed", rep.Removed)
			}
			failing = err != nil
		}
	}
}

// openAnchors returns the anchor store beside the correlation store: in the
// same PostgreSQL database (so every replica continues every conversation),
// or in memory.
func openAnchors(cfg config, st store) anchorStore {
	if pg, ok := st.(*pgstore.Store); ok {
		return pg.Anchors(cfg.anchorLimits, cfg.anchorPolicy)
	}
	return memstore.NewAnchors(cfg.anchorLimits, cfg.anchorPolicy)
}

// anchorHealth is the conversation part of /health: anchors per state, their
// bytes and the limit — never an id.
func anchorHealth(ctx context.Context, cfg config, st anchorStore) map[string]any {
	h := map[string]any{"continuity": cfg.continuity}
	if st == nil {
		return h
	}
	c, err := st.Counts(ctx)
	if err != nil {
		h["state"], h["code"] = "unavailable", string(errs.CodeOf(err))
		return h
	}
	states := map[string]int{}
	for _, s := range conversation.States {
		if s != conversation.Removed {
			states[string(s)] = c.ByState[s]
		}
	}
	h["state"], h["anchors_by_state"], h["anchors"] = "ok", states, c.Anchors
	h["bytes"], h["max_anchors"], h["ttl_ms"] = c.Bytes, c.MaxAnchors, cfg.anchorPolicy.TTL.Milliseconds()
	return h
}

// storeHealth is the correlation part of /health: counts per state and
// capacity use (never an id), and for PostgreSQL whether the database answers.
func storeHealth(ctx context.Context, cfg config, st store) map[string]any {
	h := map[string]any{"store": cfg.store, "enabled": cfg.correlation}
	if pg, ok := st.(*pgstore.Store); ok {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := pg.Ping(pctx); err != nil {
			h["state"], h["code"] = "unavailable", string(errs.CorrelationStoreUnavailable)
			return h
		}
		h["state"], h["schema_version"] = "ok", pg.SchemaVersion()
	}
	c, err := st.Counts(ctx)
	if err != nil {
		h["state"], h["code"] = "unavailable", string(errs.CodeOf(err))
		return h
	}
	states := map[string]int{}
	for s, n := range c.ByState {
		states[string(s)] = n
	}
	h["groups_by_state"], h["live_groups"], h["live_calls"] = states, c.LiveGroups, c.LiveCalls
	h["reserved_groups"], h["cache_bytes"] = c.ReservedGroups, c.CacheBytes
	h["max_groups"], h["max_calls"], h["max_cache_bytes"] = c.MaxGroups, c.MaxCalls, c.ResponseCacheBytes
	return h
}
