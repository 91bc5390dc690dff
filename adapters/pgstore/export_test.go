package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pmgate/pmgate/domain/correlation"
)

// EncodeRecord, DecodeRecord and DueAt expose the record encoding to the
// external tests.
var (
	EncodeRecord = func(g correlation.Group) []byte { return encodeRecord(&g) }
	DecodeRecord = decodeRecord
	DueAt        = func(g correlation.Group) *time.Time { return dueAt(&g) }
)

// LoadPending bulk-loads PENDING groups with COPY, bypassing reservations, for
// benchmark set-up only (admitting 10⁵ groups one by one would dominate a
// run). The accounting row is adjusted in the same transaction.
func (s *Store) LoadPending(ctx context.Context, groups []correlation.Group) error {
	return s.inTx(ctx, "load", pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		var calls int
		grows := make([][]any, 0, len(groups))
		var crows [][]any
		for i := range groups {
			g := &groups[i]
			grows = append(grows, []any{g.Key, g.PrincipalID, string(g.State), len(g.Calls), g.IssuedAt, g.PendingExpiresAt, dueAt(g), encodeRecord(g)})
			for _, c := range g.Calls {
				crows = append(crows, []any{g.PrincipalID, c.PublicID, g.Key})
			}
			calls += len(g.Calls)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"correlation_groups"},
			[]string{"key", "principal_id", "state", "calls", "issued_at", "pending_expires_at", "due_at", "record"}, pgx.CopyFromRows(grows)); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"correlation_calls"}, []string{"principal_id", "public_id", "group_key"}, pgx.CopyFromRows(crows)); err != nil {
			return err
		}
		return sendAll(ctx, tx, usageStmt(correlation.Usage{LiveGroups: len(groups), LiveCalls: calls}))
	})
}

// Setting reads a server setting on a pooled connection.
func (s *Store) Setting(ctx context.Context, name string) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&v)
	return v, err
}

// ParseTrust is the pool configuration Open would use for url under opts,
// without connecting.
func ParseTrust(url string, opts ...Option) (*pgxpool.Config, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	o.trust(url, cfg)
	return cfg, nil
}

// Kill closes the connection pool as a replica that dies does: its leases are
// not given back.
func (s *Store) Kill() { s.closeOnce.Do(s.pool.Close) }

// WithLeaseGroups makes every lease n groups whatever the limits, so that the
// model test drives the leases with limits of a few groups.
func WithLeaseGroups(n int) Option { return func(o *options) { o.leaseGroups = n } }
