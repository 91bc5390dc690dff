package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/adapters/pgstore"
	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// store is what openStore opened for a running gateway: the correlation store,
// the anchor store beside it and, for PostgreSQL, the database behind both —
// everything /health and the shutdown need, so that nothing here asks which
// adapter it got.
type store struct {
	ports.CorrelationStore
	// anchors is nil when conversation continuity is off.
	anchors ports.AnchorStore
	// usage is the usage ledger beside them (docs/USAGE.md).
	usage ports.UsageLedger
	// attempts records the requests a client may send again; nil when
	// IDEMPOTENCY_CACHE_BYTES is 0.
	attempts ports.AttemptStore
	// db is the database of a shared store; nil for the memory store.
	db    database
	close func()
}

// database is the server behind a shared store, as /health reports it.
type database interface {
	// Ping reports whether the database answers. Errors:
	// correlation_store_unavailable.
	Ping(ctx context.Context) error
	// SchemaVersion is the schema version of the database when it was opened.
	SchemaVersion() int
}

// Close closes what openStore opened; it is safe to call more than once.
func (s *store) Close() {
	if s.close != nil {
		s.close()
	}
}

// openStore opens the configured correlation store and, with conversation
// continuity, the anchor store beside it: in the same PostgreSQL database (so
// every replica continues every conversation and every tool call), or in
// memory. Whether pending groups are cancelled at shutdown is the app's
// decision, from what the store reports (ports.CorrelationStore.Shared).
func openStore(ctx context.Context, cfg config, log *slog.Logger) (*store, error) {
	if cfg.store == "postgres" {
		// The database trusts what the upstream trusts: SSL_CERT_FILE and
		// SSL_CERT_DIR of the configuration, env file included (tls.go).
		roots, err := rootPool(cfg.sslCertFile, cfg.sslCertDir)
		if err != nil {
			return nil, err
		}
		pg, err := pgstore.Open(ctx, cfg.postgresURL, cfg.limits, cfg.policy, log, pgstore.WithRootCAs(roots))
		if err != nil {
			return nil, err
		}
		st := &store{CorrelationStore: pg, db: pg, close: pg.Close, usage: pg.Usage()}
		if cfg.attemptBytes > 0 {
			st.attempts = pg.Attempts(int64(cfg.attemptBytes))
		}
		if cfg.continuity {
			st.anchors = pg.Anchors(cfg.anchorLimits, cfg.anchorPolicy)
		}
		return st, nil
	}
	st := &store{CorrelationStore: memstore.New(cfg.limits, cfg.policy), usage: memstore.NewUsage()}
	if cfg.attemptBytes > 0 {
		st.attempts = memstore.NewAttempts(int64(cfg.attemptBytes))
	}
	if cfg.continuity {
		st.anchors = memstore.NewAnchors(cfg.anchorLimits, cfg.anchorPolicy)
	}
	return st, nil
}

// anchorHealth is the conversation part of /health: anchors per state, their
// bytes and the limit — never an id.
func anchorHealth(ctx context.Context, cfg config, st ports.AnchorStore) map[string]any {
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
func storeHealth(ctx context.Context, cfg config, st *store) map[string]any {
	h := map[string]any{"store": cfg.store, "enabled": cfg.correlation}
	if st.db != nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := st.db.Ping(pctx); err != nil {
			h["state"], h["code"] = "unavailable", string(errs.CorrelationStoreUnavailable)
			return h
		}
		h["state"], h["schema_version"] = "ok", st.db.SchemaVersion()
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
	h["max_groups_per_key"], h["max_calls_per_key"] = c.GroupsPerKey, c.CallsPerKey
	return h
}
