package pgstore

// Updates: one locked group row, the closure on a copy, the registry's update
// rules, and the write-back in the same transaction.

import (
	"bytes"
	"context"
	"math/rand/v2"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
)

// Update implements ports.CorrelationStore: the group row is locked (SELECT …
// FOR UPDATE), fn runs on a decoded copy, and the copy is written back in the
// same transaction only when fn returns nil. A group that reaches REMOVED is
// deleted with its call index rows. A newly cached response that would take
// the cache over ResponseCacheBytes is dropped (its digest stays), exactly as
// the registry does; the check is a conditional increment of the accounting
// row inside the transaction.
//
// The transaction takes two round trips: BEGIN and the locking SELECT in one
// pipeline, the writes and COMMIT in another (plus one for the cache budget
// when a response is being cached). A transaction left open by any failure is
// never reused: the pool closes a connection released inside a transaction,
// and the server rolls it back.
//
// Errors: unknown_tool_call when the group does not exist; fn's error
// unchanged; correlation_store_unavailable when the database fails (nothing
// is written).
func (s *Store) Update(ctx context.Context, key string, fn func(g *correlation.Group) (correlation.Decision, error)) (correlation.Decision, error) {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	conn, rec, cached, err := s.lockGroup(ctx, key)
	if conn != nil {
		defer conn.Release() // destroys the connection when a transaction is still open
	}
	if errors.Is(err, pgx.ErrNoRows) {
		s.abort(ctx, conn.Conn())
		return correlation.Decision{}, errs.New(errs.UnknownToolCall)
	}
	if err != nil {
		return correlation.Decision{}, unavailable(err, "update: lock group")
	}
	cur, err := decodeRecord(rec)
	if err != nil {
		s.abort(ctx, conn.Conn())
		return correlation.Decision{}, err
	}
	cur.CachedResponse = cached
	cp := cur.Clone()
	dec, err := fn(&cp)
	if err != nil {
		s.abort(ctx, conn.Conn())
		return dec, err
	}
	stmts, d, err := s.writeBack(ctx, conn.Conn(), &cur, &cp, rec)
	if err != nil {
		s.abort(ctx, conn.Conn())
		return correlation.Decision{}, err
	}
	stmts = append(stmts, usageStmt(d)...)
	stmts = append(stmts, stmt{sql: `COMMIT`})
	if err := sendAll(ctx, conn.Conn(), stmts); err != nil {
		return correlation.Decision{}, unavailable(err, "update: write and commit")
	}
	return dec, nil
}

// lockGroup begins a transaction on a pooled connection and locks the group
// row, in one round trip. A failure that proves nothing was sent (a stale
// pooled connection after a database restart) is retried once on another
// connection. The caller releases conn (nil only when err is set).
func (s *Store) lockGroup(ctx context.Context, key string) (conn *pgxpool.Conn, rec, cached []byte, err error) {
	for attempt := 0; ; attempt++ {
		conn, err = s.pool.Acquire(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		b := &pgx.Batch{}
		b.Queue(`BEGIN`)
		b.Queue(`SELECT record, cached_response FROM correlation_groups WHERE key = $1 FOR UPDATE`, key)
		br := conn.SendBatch(ctx, b)
		_, err = br.Exec()
		if err == nil {
			err = br.QueryRow().Scan(&rec, &cached)
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err == nil || errors.Is(err, pgx.ErrNoRows) || attempt > 0 || !pgconn.SafeToRetry(err) || ctx.Err() != nil {
			return conn, rec, cached, err
		}
		conn.Release()
	}
}

// abort rolls back the open transaction of conn; when that fails the
// connection is closed (by the pool, on release), which rolls it back too.
func (s *Store) abort(ctx context.Context, conn *pgx.Conn) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, _ = conn.Exec(rctx, `ROLLBACK`)
}

// writeBack returns the statements that write cp, the changed copy of cur, to
// the locked row (or delete the row when cp is REMOVED), and the accounting
// change still to be applied. The rules of an update are the registry's
// (correlation.FinishUpdate): the identity of a group never changes, and a new
// cached response that does not fit the budget is dropped — decided now,
// through ex, by a conditional increment of the accounting row, whose bytes
// the returned change then leaves out. oldRec is cur's stored encoding; an
// unchanged group needs no statement.
func (s *Store) writeBack(ctx context.Context, ex execer, cur, cp *correlation.Group, oldRec []byte) ([]stmt, correlation.Usage, error) {
	applied := 0
	err := correlation.FinishUpdate(cur, cp, func(n int) (bool, error) {
		tag, err := ex.Exec(ctx, `UPDATE correlation_usage SET cache_bytes = cache_bytes + $1 WHERE id AND cache_bytes + $1 <= $2`,
			int64(n), int64(s.limits.ResponseCacheBytes))
		if err != nil {
			return false, dbErr(err, "update: cache budget")
		}
		if tag.RowsAffected() != 1 {
			return false, nil // over the budget: not retained
		}
		applied = n
		return true, nil
	})
	if err != nil {
		return nil, correlation.Usage{}, err
	}
	d := correlation.UsageChange(cur, cp)
	d.CacheBytes -= applied
	if cp.State == correlation.Removed {
		return []stmt{{sql: `DELETE FROM correlation_groups WHERE key = $1`, args: []any{cur.Key}}}, d, nil
	}
	rec := encodeRecord(cp)
	if bytes.Equal(rec, oldRec) && bytes.Equal(cp.CachedResponse, cur.CachedResponse) && (cp.CachedResponse == nil) == (cur.CachedResponse == nil) {
		return nil, d, nil // nothing changed (a refused submission): no write
	}
	return []stmt{{sql: `UPDATE correlation_groups SET state = $2, issued_at = $3, pending_expires_at = $4,
		inflight_expires_at = $5, terminal_expires_at = $6, due_at = $7, record = $8, cached_response = $9, updated_at = now()
		WHERE key = $1`,
		args: []any{cur.Key, string(cp.State), cp.IssuedAt, cp.PendingExpiresAt, nullTime(cp.InflightExpiresAt),
			nullTime(cp.TerminalExpiresAt), dueAt(cp), rec, cp.CachedResponse}}}, d, nil
}

// usageStmt applies d to the accounting row; a zero change writes nothing (a
// claim, PENDING→INFLIGHT, does not touch the row and so does not contend
// with admissions). It goes last in a transaction, so that any lock it takes
// is held for as short a time as possible.
//
// Capacity given back (a group completed, expired or removed: live groups and
// calls fall, no cache bytes change) is not taken off the row: it goes to the
// lease of a stripe chosen at random, so that completions do not queue on the
// row's lock through their commits. That is exact: the row counts live groups
// + counted reservations + the stripes' leases (migration 4), and this moves
// units from the first term to the last, so the row stays what it counts and
// never falls below it; the freed units can be taken by any reservation of
// any replica from that stripe, and when none can be had from a lease the
// exact decision takes every lease back first, so they are never lost to it.
// A change of the cache bytes locks the row anyway (the budget is exact on
// it) and is applied there whole.
func usageStmt(d correlation.Usage) []stmt {
	switch {
	case d == (correlation.Usage{}):
		return nil
	case d.CacheBytes == 0 && d.LiveGroups <= 0 && d.LiveCalls <= 0:
		return []stmt{{sql: `UPDATE correlation_usage_stripes SET free_groups = free_groups - $1, free_calls = free_calls - $2
			WHERE stripe = $3::smallint`, args: []any{int64(d.LiveGroups), int64(d.LiveCalls), rand.IntN(stripes)}}}
	}
	return []stmt{{sql: `UPDATE correlation_usage SET live_groups = live_groups + $1, live_calls = live_calls + $2,
		cache_bytes = cache_bytes + $3 WHERE id`, args: []any{int64(d.LiveGroups), int64(d.LiveCalls), int64(d.CacheBytes)}}}
}
