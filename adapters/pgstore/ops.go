package pgstore

import (
	"bytes"
	"context"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// Reserve implements ports.CorrelationStore, as correlation.Registry.Reserve:
// the group fits when live groups + reservations + 1 ≤ MaxGroups and live
// calls + reserved calls + calls ≤ MaxCalls, counted under the lock of the
// accounting row. When it does not fit, overdue groups are swept (expiry is
// checked on admission) and the check is made once more; pending groups are
// never evicted.
func (s *Store) Reserve(ctx context.Context, calls int, now time.Time) (ports.Reservation, error) {
	if calls <= 0 || calls > s.limits.MaxCalls {
		return ports.Reservation{}, errs.Newf(errs.CorrelationCapacityExceeded, "group of %d calls", calls)
	}
	id, err := newID()
	if err != nil {
		return ports.Reservation{}, err
	}
	ok, err := s.tryReserve(ctx, id, calls)
	if err == nil && !ok {
		if _, err = s.Sweep(ctx, now); err == nil {
			ok, err = s.tryReserve(ctx, id, calls)
		}
	}
	if err != nil {
		return ports.Reservation{}, err
	}
	if !ok {
		// Capacity pressure (machine row C10): the pending groups stay as they
		// are; the newer group is refused.
		s.log.DebugContext(ctx, "correlation capacity pressure", "calls", calls)
		return ports.Reservation{}, errs.New(errs.CorrelationCapacityExceeded)
	}
	return ports.Reservation{ID: id, Calls: calls}, nil
}

// tryReserve inserts the reservation when the group fits: one pipelined batch
// (one round trip), which PostgreSQL runs as one implicit transaction. The
// first statement locks the accounting row; the statements after it take
// their snapshots once the lock is held (READ COMMITTED), so they count every
// committed group and reservation, and no other capacity decision can
// interleave: admissions update the row, reservations lock it. Expired
// reservations (a replica died between reserving and admitting) are deleted
// first; ones a concurrent admission holds are skipped, never waited for.
//
// The reservation commits asynchronously (synchronous_commit off for this
// transaction only), so that the accounting row's lock is not held across a
// WAL flush: a reservation is worth nothing after a database crash anyway
// (its admission then fails with correlation_capacity_exceeded and the turn
// is refused before any id is shown), and the WAL is ordered, so an admission
// that commits durably makes its reservation durable too.
func (s *Store) tryReserve(ctx context.Context, id string, calls int) (bool, error) {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	send := func() (bool, error) {
		b := &pgx.Batch{}
		b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
		b.Queue(`SELECT 1 FROM correlation_usage WHERE id FOR UPDATE`)
		b.Queue(`DELETE FROM correlation_reservations WHERE id IN
			(SELECT id FROM correlation_reservations WHERE expires_at <= now() FOR UPDATE SKIP LOCKED)`)
		b.Queue(`INSERT INTO correlation_reservations (id, calls, expires_at)
			SELECT $1::text, $2::integer, now() + make_interval(secs => $3::float8)
			FROM correlation_usage u,
			     (SELECT count(*) AS groups, coalesce(sum(calls), 0) AS calls FROM correlation_reservations) r
			WHERE u.id AND u.live_groups + r.groups + 1 <= $4::bigint AND u.live_calls + r.calls + $2::integer <= $5::bigint`,
			id, calls, s.opt.reservationTTL.Seconds(), s.limits.MaxGroups, s.limits.MaxCalls)
		br := s.pool.SendBatch(ctx, b)
		var tag pgconn.CommandTag
		var err error
		for range 4 {
			if tag, err = br.Exec(); err != nil {
				break
			}
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return tag.RowsAffected() == 1, err
	}
	ok, err := send()
	if err != nil && pgconn.SafeToRetry(err) && ctx.Err() == nil {
		ok, err = send()
	}
	if err != nil {
		return false, unavailable(err, "reserve")
	}
	return ok, nil
}

// HasRoom implements ports.CorrelationStore, as correlation.Registry.HasRoom:
// one unlocked read of the accounting row and the unexpired reservations with
// the predicate of tryReserve; when full, overdue groups are swept and it looks
// once more. Nothing is written but the sweep.
func (s *Store) HasRoom(ctx context.Context, calls int, now time.Time) (bool, error) {
	if calls <= 0 || calls > s.limits.MaxCalls {
		return false, nil
	}
	ok, err := s.roomNow(ctx, calls)
	if err == nil && !ok {
		if _, err = s.Sweep(ctx, now); err == nil {
			ok, err = s.roomNow(ctx, calls)
		}
	}
	return ok, err
}

func (s *Store) roomNow(ctx context.Context, calls int) (bool, error) {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT u.live_groups + r.groups + 1 <= $1::bigint AND u.live_calls + r.calls + $2::integer <= $3::bigint
		FROM correlation_usage u,
		     (SELECT count(*) AS groups, coalesce(sum(calls), 0) AS calls FROM correlation_reservations WHERE expires_at > now()) r
		WHERE u.id`, s.limits.MaxGroups, calls, s.limits.MaxCalls).Scan(&ok)
	if err != nil {
		return false, unavailable(err, "has room")
	}
	return ok, nil
}

// Release implements ports.CorrelationStore; an unknown reservation is not an
// error. Errors: correlation_store_unavailable (the reservation then frees
// itself at its expiry).
func (s *Store) Release(ctx context.Context, r ports.Reservation) error {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `DELETE FROM correlation_reservations WHERE id = $1`, r.ID); err != nil {
		return unavailable(err, "release")
	}
	return nil
}

// Admit implements ports.CorrelationStore, as correlation.Registry.Admit: the
// reservation must exist (and not have expired) and cover the calls. One
// statement — atomic on its own — consumes the reservation and writes the
// group row, its call index rows and the accounting change; when the
// reservation does not qualify it changes nothing. A public id already
// indexed for the principal fails with correlation.ErrDuplicatePublicID and
// leaves the reservation in place for the caller's next attempt.
func (s *Store) Admit(ctx context.Context, r ports.Reservation, g correlation.Group) error {
	if len(g.Calls) == 0 {
		return errs.New(errs.CorrelationCapacityExceeded)
	}
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	if g.State != correlation.Pending || g.Key == "" {
		// A mis-built group: the registry answers capacity first when the
		// reservation does not qualify, then the assertion.
		var n int
		err := s.pool.QueryRow(ctx, `SELECT calls FROM correlation_reservations WHERE id = $1 AND expires_at > now()`, r.ID).Scan(&n)
		switch {
		case errors.Is(err, pgx.ErrNoRows) || (err == nil && n < len(g.Calls)):
			return errs.New(errs.CorrelationCapacityExceeded)
		case err != nil:
			return unavailable(err, "admit: read reservation")
		case g.State != correlation.Pending:
			return errors.AssertionFailedf("correlation: admitted group must be PENDING")
		default:
			return errors.AssertionFailedf("correlation: group key missing or reused")
		}
	}
	cp := g.Clone()
	cp.CachedResponse = nil
	ids := make([]string, 0, len(cp.Calls))
	seen := make(map[string]bool, len(cp.Calls))
	for _, c := range cp.Calls { // as the registry's index: one entry per distinct id
		if !seen[c.PublicID] {
			seen[c.PublicID] = true
			ids = append(ids, c.PublicID)
		}
	}
	var admitted int
	err := s.pool.QueryRow(ctx, `WITH res AS (
			DELETE FROM correlation_reservations WHERE id = $1::text AND expires_at > now() AND calls >= $2::integer RETURNING id
		), grp AS (
			INSERT INTO correlation_groups
				(key, principal_id, state, calls, issued_at, pending_expires_at, inflight_expires_at, terminal_expires_at, due_at, record)
			SELECT $3::text, $4::text, $5::text, $2::integer, $6::timestamptz, $7::timestamptz, $8::timestamptz,
				$9::timestamptz, $10::timestamptz, $11::bytea FROM res
			RETURNING key
		), idx AS (
			INSERT INTO correlation_calls (principal_id, public_id, group_key)
			SELECT $4::text, id, grp.key FROM grp, unnest($12::text[]) AS id
		), acc AS (
			UPDATE correlation_usage SET live_groups = live_groups + 1, live_calls = live_calls + $2::integer
			WHERE id AND EXISTS (SELECT 1 FROM grp)
		)
		SELECT count(*) FROM grp`,
		r.ID, len(cp.Calls), cp.Key, cp.PrincipalID, string(cp.State), cp.IssuedAt, cp.PendingExpiresAt,
		nullTime(cp.InflightExpiresAt), nullTime(cp.TerminalExpiresAt), dueAt(&cp), encodeRecord(&cp), ids).Scan(&admitted)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "correlation_calls_pkey":
		return errors.Mark(errors.New("correlation: public id collision"), correlation.ErrDuplicatePublicID)
	case errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "correlation_groups_pkey":
		return errors.AssertionFailedf("correlation: group key missing or reused")
	case err != nil:
		return unavailable(err, "admit")
	case admitted != 1:
		return errs.New(errs.CorrelationCapacityExceeded) // no such reservation, expired, or too small: nothing changed
	}
	return nil
}

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
func (s *Store) Update(ctx context.Context, key string, fn func(g *correlation.Group) error) error {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	conn, rec, cached, err := s.lockGroup(ctx, key)
	if conn != nil {
		defer conn.Release() // destroys the connection when a transaction is still open
	}
	if errors.Is(err, pgx.ErrNoRows) {
		s.abort(ctx, conn.Conn())
		return errs.New(errs.UnknownToolCall)
	}
	if err != nil {
		return unavailable(err, "update: lock group")
	}
	cur, err := decodeRecord(rec)
	if err != nil {
		s.abort(ctx, conn.Conn())
		return err
	}
	cur.CachedResponse = cached
	cp := cur.Clone()
	if err := fn(&cp); err != nil {
		s.abort(ctx, conn.Conn())
		return err
	}
	stmts, d, err := s.writeBack(ctx, conn.Conn(), &cur, &cp, rec)
	if err != nil {
		s.abort(ctx, conn.Conn())
		return err
	}
	stmts = append(stmts, usageStmt(d)...)
	stmts = append(stmts, stmt{sql: `COMMIT`})
	if err := sendAll(ctx, conn.Conn(), stmts); err != nil {
		return unavailable(err, "update: write and commit")
	}
	return nil
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

// stmt is one statement of a pipeline.
type stmt struct {
	sql  string
	args []any
}

// execer runs one statement now (a transaction or a connection in one).
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// batcher sends a pipeline (a transaction or a connection in one).
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// sendAll sends stmts as one pipeline (one round trip) and checks every
// result; a COMMIT must report COMMIT (PostgreSQL answers a COMMIT of a
// failed transaction with ROLLBACK).
func sendAll(ctx context.Context, conn batcher, stmts []stmt) error {
	if len(stmts) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, st := range stmts {
		b.Queue(st.sql, st.args...)
	}
	br := conn.SendBatch(ctx, b)
	var err error
	for _, st := range stmts {
		var tag pgconn.CommandTag
		if tag, err = br.Exec(); err != nil {
			break
		}
		if st.sql == `COMMIT` && tag.String() != `COMMIT` {
			err = errors.New("pgstore: the transaction was rolled back at commit")
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
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
// with admissions). It goes last in a transaction, so that the row's lock is
// held for as short a time as possible.
func usageStmt(d correlation.Usage) []stmt {
	if d == (correlation.Usage{}) {
		return nil
	}
	return []stmt{{sql: `UPDATE correlation_usage SET live_groups = live_groups + $1, live_calls = live_calls + $2,
		cache_bytes = cache_bytes + $3 WHERE id`, args: []any{int64(d.LiveGroups), int64(d.LiveCalls), int64(d.CacheBytes)}}}
}

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

// Counts implements ports.CorrelationStore from one consistent snapshot:
// capacity use from the accounting row, groups per state by aggregate, and
// the reservations that have not expired. Errors: correlation_store_unavailable.
func (s *Store) Counts(ctx context.Context) (correlation.Counts, error) {
	c := s.emptyCounts()
	err := s.inTx(ctx, "counts", pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
		var lg, lc, cb, rg, rc int64
		if err := tx.QueryRow(ctx, `SELECT live_groups, live_calls, cache_bytes FROM correlation_usage WHERE id`).Scan(&lg, &lc, &cb); err != nil {
			return dbErr(err, "counts: usage")
		}
		if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(calls), 0) FROM correlation_reservations WHERE expires_at > now()`).Scan(&rg, &rc); err != nil {
			return dbErr(err, "counts: reservations")
		}
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
		c.ReservedGroups, c.ReservedCalls = int(rg), int(rc)
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
