package pgstore

// Reads: public ids to group keys, counts, pending groups.

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pmgate/pmgate/domain/correlation"
)

// Resolve implements ports.CorrelationStore: one indexed lookup; ids unknown
// for the principal are absent. Errors: correlation_store_unavailable.
func (s *Store) Resolve(ctx context.Context, principalID string, publicIDs []string) (map[string]string, error) {
	out := make(map[string]string, len(publicIDs))
	if len(publicIDs) == 0 {
		return out, nil
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	query := func() error {
		rows, err := s.pool.Query(ctx, `SELECT public_id, group_key FROM correlation_calls WHERE principal_id = $1 AND public_id = ANY($2::text[])`,
			principalID, publicIDs)
		if err != nil {
			return err
		}
		var id, key string
		_, err = pgx.ForEachRow(rows, []any{&id, &key}, func() error {
			out[id] = key
			return nil
		})
		return err
	}
	err := query()
	if err != nil && pgconn.SafeToRetry(err) && ctx.Err() == nil {
		err = query()
	}
	if err != nil {
		return nil, unavailable(err, "resolve")
	}
	return out, nil
}

// Counts implements ports.CorrelationStore from one consistent snapshot:
// capacity use from the accounting row (less the reservations and leases it counts), groups per state by aggregate, and
// the reservations that have not expired. Errors: correlation_store_unavailable.
func (s *Store) Counts(ctx context.Context) (correlation.Counts, error) {
	c := s.emptyCounts()
	err := s.inTx(ctx, "counts", pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
		var lg, lc, cb, rg, rc, kg, kc int64
		if err := tx.QueryRow(ctx, `SELECT live_groups, live_calls, cache_bytes FROM correlation_usage WHERE id`).Scan(&lg, &lc, &cb); err != nil {
			return dbErr(err, "counts: usage")
		}
		// The row counts the counted reservations (expired or not) and the
		// stripes' and replicas' leases with the live groups (migrations 4 and
		// 7): they are taken off.
		if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE expires_at > now()), coalesce(sum(calls) FILTER (WHERE expires_at > now()), 0),
				count(*) FILTER (WHERE counted) + (SELECT coalesce(sum(free_groups), 0) FROM correlation_usage_stripes)
				  + (SELECT coalesce(sum(free_groups), 0) FROM correlation_leases),
				coalesce(sum(calls) FILTER (WHERE counted), 0) + (SELECT coalesce(sum(free_calls), 0) FROM correlation_usage_stripes)
				  + (SELECT coalesce(sum(free_calls), 0) FROM correlation_leases)
			FROM correlation_reservations`).Scan(&rg, &rc, &kg, &kc); err != nil {
			return dbErr(err, "counts: reservations")
		}
		lg, lc = lg-kg, lc-kc
		rows, err := tx.Query(ctx, `SELECT state, count(*) FROM correlation_groups GROUP BY state`)
		if err != nil {
			return dbErr(err, "counts: states")
		}
		var st string
		var n int
		if _, err := pgx.ForEachRow(rows, []any{&st, &n}, func() error {
			c.ByState[correlation.State(st)] = n
			return nil
		}); err != nil {
			return dbErr(err, "counts: states")
		}
		c.LiveGroups, c.LiveCalls, c.CacheBytes = int(lg), int(lc), int(cb)
		// The reservations this replica holds in memory are reserved (they are
		// free units of its leases on the row); another replica's are not
		// seen, for the microseconds between its Reserve and its Admit.
		og, oc := s.leases.outstanding()
		c.ReservedGroups, c.ReservedCalls = int(rg)+og, int(rc)+oc
		return nil
	})
	if err != nil {
		return s.emptyCounts(), err
	}
	return c, nil
}

// Pending implements ports.CorrelationStore: one indexed read. Errors:
// correlation_store_unavailable.
func (s *Store) Pending(ctx context.Context) ([]string, error) {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT key FROM correlation_groups WHERE state = $1 ORDER BY key`, string(correlation.Pending))
	if err != nil {
		return nil, unavailable(err, "pending")
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, unavailable(err, "pending")
	}
	return keys, nil
}
