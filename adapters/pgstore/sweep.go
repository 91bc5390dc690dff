package pgstore

// Sweeps: time applied to due rows, in batches, by the domain machine.

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
)

// Sweep implements ports.CorrelationStore, as correlation.Registry.Sweep: in
// batches of due rows taken with FOR UPDATE SKIP LOCKED (one transaction per
// batch, in key order), every group whose time event is due is moved by the
// domain machine (Group.Tick): overdue PENDING → EXPIRED, overdue INFLIGHT →
// UNCERTAIN, old tombstones removed. Rows another replica is sweeping or
// updating are skipped, so concurrent sweeps never apply an event twice; a
// PENDING group that is not overdue is never touched.
func (s *Store) Sweep(ctx context.Context, now time.Time) (correlation.SweepReport, error) {
	var rep correlation.SweepReport
	after := ""
	for {
		var batch correlation.SweepReport
		n := 0
		err := s.inTx(ctx, "sweep", pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
			batch = correlation.SweepReport{}
			type due struct {
				key         string
				rec, cached []byte
			}
			rows, err := tx.Query(ctx, `SELECT key, record, cached_response FROM correlation_groups
				WHERE due_at <= $1 AND key > $2 ORDER BY key LIMIT $3 FOR UPDATE SKIP LOCKED`, now, after, sweepBatch)
			if err != nil {
				return dbErr(err, "sweep: select due")
			}
			var dues []due
			var r due
			if _, err := pgx.ForEachRow(rows, []any{&r.key, &r.rec, &r.cached}, func() error {
				dues = append(dues, due{key: r.key, rec: append([]byte(nil), r.rec...), cached: cloneBytes(r.cached)})
				return nil
			}); err != nil {
				return dbErr(err, "sweep: read due")
			}
			n = len(dues)
			if n > 0 {
				after = dues[n-1].key
			}
			var stmts []stmt
			var total correlation.Usage
			for _, row := range dues {
				cur, err := decodeRecord(row.rec)
				if err != nil {
					s.log.ErrorContext(ctx, "correlation sweep: undecodable record skipped", "error", errs.Redact(err))
					continue
				}
				cur.CachedResponse = row.cached
				cp := cur.Clone()
				d, ok, err := cp.Tick(now, s.policy)
				if err != nil || !ok {
					continue // not due after all (the column keeps microseconds), or no row: left alone
				}
				st, delta, err := s.writeBack(ctx, tx, &cur, &cp, row.rec)
				if err != nil {
					return err
				}
				stmts = append(stmts, st...)
				total.Add(delta)
				batch.Add(d)
			}
			if err := sendAll(ctx, tx, append(stmts, usageStmt(total)...)); err != nil {
				return dbErr(err, "sweep: write")
			}
			return nil
		})
		if err != nil {
			return rep, err
		}
		rep.Merge(batch)
		if n < sweepBatch {
			return rep, nil
		}
	}
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}
