package pgstore

// Admission: capacity is reserved before any public id is shown, and a group
// is admitted under its reservation.

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// Reserve implements ports.CorrelationStore, as correlation.Registry.Reserve:
// the group fits when live groups + reservations + 1 ≤ MaxGroups and live
// calls + reserved calls + calls ≤ MaxCalls. When it does not fit, overdue
// groups are swept (expiry is checked on admission) and the check is made
// once more; pending groups are never evicted.
//
// Capacity must be exact across replicas, so some decision has to be
// serialized; the design (migration 4) serializes as little as it can:
//
//   - The accounting row counts everything taken from the capacity: live
//     groups, counted reservations, and the free capacity leased to the
//     stripes. Only a reservation or a lease raises it, under its lock; Admit
//     turns a reservation into a group without writing it, so admissions, whose
//     commits wait for the WAL flush, no longer queue on each other's flush.
//   - A reservation takes from the lease of one stripe, chosen at random: a
//     conditional decrement that locks that stripe only. An empty stripe is
//     refilled from the row (its lock, once per lease of up to leaseGroups).
//     Units taken from a lease were counted on the row before, so the sum can
//     never pass the cap, whatever the replicas do at once.
//   - When no lease can be had (near the cap), the reservation locks the row
//     and every stripe, takes the leases back, reclaims expired reservations
//     and decides on the row exactly, as every reservation did before. Leases
//     never cause a refusal: only that exact check refuses.
//
// Striped counters summed on read would not do: a check near the cap must see
// every stripe, and a sum read without their locks lets two replicas both pass
// the last unit.
func (s *Store) Reserve(ctx context.Context, calls int, now time.Time) (ports.Reservation, error) {
	if calls <= 0 || calls > s.limits.MaxCalls {
		return ports.Reservation{}, errs.Newf(errs.CorrelationCapacityExceeded, "group of %d calls", calls)
	}
	id, err := newID()
	if err != nil {
		return ports.Reservation{}, err
	}
	ok := false
	if lg, lc := s.lease(calls); lg > 0 {
		ok, err = s.reserveLeased(ctx, id, calls, rand.IntN(stripes), lg, lc)
	}
	if err == nil && !ok {
		ok, err = s.reserveExact(ctx, id, calls)
	}
	if err == nil && !ok {
		if _, err = s.Sweep(ctx, now); err == nil {
			ok, err = s.reserveExact(ctx, id, calls)
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

// stripes is the number of rows of correlation_usage_stripes (migration 4).
const stripes = 16

// lease is the capacity one refill moves from the accounting row to a
// stripe: a quarter of the capacity spread over the stripes, at most 64
// groups, and calls in the limits' proportion (at least this group's). Below
// two groups a lease saves nothing and every reservation decides exactly.
func (s *Store) lease(calls int) (groups, leaseCalls int) {
	groups = min(64, s.limits.MaxGroups/(4*stripes))
	if groups < 2 {
		return 0, 0
	}
	return groups, max(calls, groups*s.limits.MaxCalls/s.limits.MaxGroups)
}

// uncounted is the count of the reservations a version 3 binary inserted
// (during a rolling upgrade) that have not expired: they are not on the
// accounting row. Read after the row's lock is taken, it sees all of them
// (version 3 binaries take that lock to reserve).
const uncounted = `(SELECT count(*) AS groups, coalesce(sum(calls), 0) AS calls FROM correlation_reservations
	WHERE NOT counted AND expires_at > now())`

// asyncCommit makes the transaction it runs in commit asynchronously
// (sendReserve says why that is safe for reservations).
const asyncCommit = `set_config('synchronous_commit', 'off', true)`

// takeFromStripe reserves from the lease of stripe $4: a conditional
// decrement, exact on that row (a concurrent one is re-checked on its newest
// version), and the reservation's insert. It sets asyncCommit itself, on the
// row it inserts (a volatile qual, evaluated once per row, so it runs whenever
// anything is written and before the commit reads it): the common reservation
// is one statement, not two.
const takeFromStripe = `WITH st AS (
		UPDATE correlation_usage_stripes SET free_groups = free_groups - 1, free_calls = free_calls - $2::integer
		WHERE stripe = $4::smallint AND free_groups >= 1 AND free_calls >= $2::integer
		RETURNING 1
	)
	INSERT INTO correlation_reservations (id, calls, expires_at, counted)
	SELECT $1::text, $2::integer, now() + make_interval(secs => $3::float8), true FROM st
	WHERE ` + asyncCommit + ` IS NOT NULL`

// reserveLeased reserves from stripe k's lease: one round trip when the lease
// has room, a second that refills it under the accounting row's lock when it
// has not. False when no lease of (leaseGroups, leaseCalls) fits in the room
// left: the caller then decides exactly.
func (s *Store) reserveLeased(ctx context.Context, id string, calls, k, leaseGroups, leaseCalls int) (bool, error) {
	ttl := s.opt.reservationTTL.Seconds()
	ok, err := s.sendReserve(ctx, "reserve", stmt{sql: takeFromStripe, args: []any{id, calls, ttl, k}})
	if err != nil || ok {
		return ok, err
	}
	return s.sendReserve(ctx, "reserve: lease",
		stmt{sql: lockRow},
		stmt{sql: `WITH room AS (
				SELECT least($2::bigint, $4::bigint - u.live_groups - r.groups) AS groups,
				       least($3::bigint, $5::bigint - u.live_calls - r.calls) AS calls
				FROM correlation_usage u, ` + uncounted + ` r WHERE u.id
			), m AS (
				UPDATE correlation_usage u SET live_groups = u.live_groups + room.groups, live_calls = u.live_calls + room.calls
				FROM room WHERE u.id AND room.groups >= 1 AND room.calls >= $6::integer
				RETURNING room.groups, room.calls
			)
			UPDATE correlation_usage_stripes st SET free_groups = st.free_groups + m.groups, free_calls = st.free_calls + m.calls
			FROM m WHERE st.stripe = $1::smallint`,
			args: []any{k, leaseGroups, leaseCalls, s.limits.MaxGroups, s.limits.MaxCalls, calls}},
		stmt{sql: takeFromStripe, args: []any{id, calls, ttl, k}})
}

// The statements that decide exactly: the locks, taken in the one order every
// writer uses (the row, then stripes by number), then every lease taken back
// and the expired reservations reclaimed (a replica died, or failed, between
// reserving and admitting; ones a concurrent admission or release holds are
// skipped, never waited for).
const (
	lockRow     = `SELECT 1 FROM correlation_usage WHERE id FOR UPDATE`
	lockStripes = `SELECT 1 FROM correlation_usage_stripes ORDER BY stripe FOR UPDATE`
	takeBack    = `WITH back AS (
			SELECT coalesce(sum(free_groups), 0) AS groups, coalesce(sum(free_calls), 0) AS calls FROM correlation_usage_stripes
		), zero AS (
			UPDATE correlation_usage_stripes SET free_groups = 0, free_calls = 0 WHERE free_groups > 0 OR free_calls > 0
		), gone AS (
			DELETE FROM correlation_reservations WHERE id IN
				(SELECT id FROM correlation_reservations WHERE expires_at <= now() FOR UPDATE SKIP LOCKED)
			RETURNING calls, counted
		), d AS (
			SELECT back.groups + (SELECT count(*) FROM gone WHERE counted) AS groups,
			       back.calls + (SELECT coalesce(sum(calls), 0) FROM gone WHERE counted) AS calls FROM back
		)
		UPDATE correlation_usage u SET live_groups = u.live_groups - d.groups, live_calls = u.live_calls - d.calls
		FROM d WHERE u.id AND (d.groups > 0 OR d.calls > 0)`
)

// reserveExact decides on the accounting row with every lease taken back: a
// conditional increment of the row and the reservation's insert. Each
// statement after the locks takes its snapshot once they are held (READ
// COMMITTED), so it counts every committed reservation and lease.
func (s *Store) reserveExact(ctx context.Context, id string, calls int) (bool, error) {
	return s.sendReserve(ctx, "reserve", stmt{sql: lockRow}, stmt{sql: lockStripes}, stmt{sql: takeBack},
		stmt{sql: `WITH acc AS (
				UPDATE correlation_usage u SET live_groups = u.live_groups + 1, live_calls = u.live_calls + $2::integer
				FROM ` + uncounted + ` r
				WHERE u.id AND u.live_groups + r.groups + 1 <= $4::bigint AND u.live_calls + r.calls + $2::integer <= $5::bigint
				RETURNING 1
			)
			INSERT INTO correlation_reservations (id, calls, expires_at, counted)
			SELECT $1::text, $2::integer, now() + make_interval(secs => $3::float8), true FROM acc`,
			args: []any{id, calls, s.opt.reservationTTL.Seconds(), s.limits.MaxGroups, s.limits.MaxCalls}})
}

// takeLeasesBack returns every lease to the accounting row, at Open: leases
// taken under other limits (a restart with lower ones) must not let this
// replica pass its own.
func (s *Store) takeLeasesBack(ctx context.Context) error {
	_, err := s.sendReserve(ctx, "open: take the leases back", stmt{sql: lockRow}, stmt{sql: lockStripes}, stmt{sql: takeBack})
	return err
}

// sendReserve runs stmts as one pipelined batch (one round trip), which
// PostgreSQL runs as one implicit transaction, and reports whether the last
// inserted the reservation. A lost connection is retried once.
//
// The batch commits asynchronously (synchronous_commit off for this
// transaction only), so that no lock it takes is held across a WAL flush: a
// reservation or a lease is worth nothing after a database crash anyway (the
// row's count of it is lost with it; the admission then fails with
// correlation_capacity_exceeded and the turn is refused before any id is
// shown), and the WAL is ordered, so an admission that commits durably makes
// its reservation, and the counts that include it, durable too.
func (s *Store) sendReserve(ctx context.Context, what string, stmts ...stmt) (bool, error) {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	send := func() (bool, error) {
		b := &pgx.Batch{}
		if len(stmts) > 1 || !strings.Contains(stmts[0].sql, asyncCommit) {
			b.Queue(`SELECT ` + asyncCommit)
		}
		for _, st := range stmts {
			b.Queue(st.sql, st.args...)
		}
		br := s.pool.SendBatch(ctx, b)
		var tag pgconn.CommandTag
		var err error
		for range b.Len() {
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
		return false, unavailable(err, what)
	}
	return ok, nil
}

// HasRoom implements ports.CorrelationStore, as correlation.Registry.HasRoom:
// one unlocked read with the predicate of reserveExact, counting what the
// row's count holds but a reservation could still have (the leases, the
// expired reservations) as room; when full, overdue groups are swept and it
// looks once more. Nothing is written but the sweep.
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
	// r is what the row's count lacks: + uncounted live reservations, − counted
	// expired ones; f the leases.
	err := s.pool.QueryRow(ctx, `SELECT u.live_groups + r.groups - f.groups + 1 <= $1::bigint AND u.live_calls + r.calls - f.calls + $2::integer <= $3::bigint
		FROM correlation_usage u,
		     (SELECT count(*) FILTER (WHERE NOT counted AND expires_at > now()) - count(*) FILTER (WHERE counted AND expires_at <= now()) AS groups,
		             coalesce(sum(calls) FILTER (WHERE NOT counted AND expires_at > now()), 0)
		               - coalesce(sum(calls) FILTER (WHERE counted AND expires_at <= now()), 0) AS calls
		      FROM correlation_reservations) r,
		     (SELECT coalesce(sum(free_groups), 0) AS groups, coalesce(sum(free_calls), 0) AS calls FROM correlation_usage_stripes) f
		WHERE u.id`, s.limits.MaxGroups, calls, s.limits.MaxCalls).Scan(&ok)
	if err != nil {
		return false, unavailable(err, "has room")
	}
	return ok, nil
}

// The admission statements (admitSQL): admitExact for a counted reservation
// of exactly the group's calls, which writes nothing else; admitAny for any
// reservation that covers them, which also gives the accounting row what the
// group does not use of a counted one, or adds the group for an uncounted one
// (version 3).
var (
	admitExact = admitSQL(`AND counted AND calls = $2::integer`, ``)
	admitAny   = admitSQL(`AND calls >= $2::integer`, `, acc AS (
			UPDATE correlation_usage u SET live_groups = u.live_groups + d.groups, live_calls = u.live_calls + d.calls
			FROM (SELECT CASE WHEN res.counted THEN 0 ELSE 1 END AS groups,
			             CASE WHEN res.counted THEN $2::integer - res.calls ELSE $2::integer END AS calls
			      FROM res, grp) d
			WHERE u.id AND (d.groups <> 0 OR d.calls <> 0)
		)`)
)

// admitSQL is the admission statement: the reservation consumed when it
// qualifies (its id, not expired, and cond), the group row and its call index
// rows inserted from it, and the parts in extra; it returns how many groups
// it inserted (0 or 1).
func admitSQL(cond, extra string) string {
	return `WITH res AS (
			DELETE FROM correlation_reservations WHERE id = $1::text AND expires_at > now() ` + cond + ` RETURNING calls, counted
		), grp AS (
			INSERT INTO correlation_groups
				(key, principal_id, state, calls, issued_at, pending_expires_at, inflight_expires_at, terminal_expires_at, due_at, record)
			SELECT $3::text, $4::text, $5::text, $2::integer, $6::timestamptz, $7::timestamptz, $8::timestamptz,
				$9::timestamptz, $10::timestamptz, $11::bytea FROM res
			RETURNING key
		), idx AS (
			INSERT INTO correlation_calls (principal_id, public_id, group_key)
			SELECT $4::text, id, grp.key FROM grp, unnest($12::text[]) AS id
		)` + extra + `
		SELECT count(*) FROM grp`
}

// Release implements ports.CorrelationStore: one statement deletes the
// reservation and gives a counted one to the lease of a stripe chosen at
// random, as a completed group's capacity is given back (usageStmt: the row
// keeps counting the units, now as a lease, so it stays exact); an unknown
// reservation is not an error. Errors: correlation_store_unavailable (the
// reservation then frees itself at its expiry).
func (s *Store) Release(ctx context.Context, r ports.Reservation) error {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, `WITH gone AS (DELETE FROM correlation_reservations WHERE id = $1::text RETURNING calls, counted)
		UPDATE correlation_usage_stripes st SET free_groups = st.free_groups + 1, free_calls = st.free_calls + gone.calls
		FROM gone WHERE st.stripe = $2::smallint AND gone.counted`, r.ID, rand.IntN(stripes)); err != nil {
		return unavailable(err, "release")
	}
	return nil
}

// Admit implements ports.CorrelationStore, as correlation.Registry.Admit: the
// reservation must exist (and not have expired) and cover the calls. One
// statement — atomic on its own — consumes the reservation and writes the
// group row and its call index rows (admitExact; admitAny when that one found
// no counted reservation of exactly the group's calls); the accounting row
// already counts the reservation, so it is written only when the group has
// fewer calls than its reservation (the difference is given back) or the
// reservation is one of a version 3 binary (not counted: the group is
// added). When the
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
	cp := g // read only; the record leaves the cached response out
	ids := make([]string, 0, len(cp.Calls))
	seen := make(map[string]bool, len(cp.Calls))
	for _, c := range cp.Calls { // as the registry's index: one entry per distinct id
		if !seen[c.PublicID] {
			seen[c.PublicID] = true
			ids = append(ids, c.PublicID)
		}
	}
	args := []any{r.ID, len(cp.Calls), cp.Key, cp.PrincipalID, string(cp.State), cp.IssuedAt, cp.PendingExpiresAt,
		nullTime(cp.InflightExpiresAt), nullTime(cp.TerminalExpiresAt), dueAt(&cp), encodeRecord(&cp), ids}
	var admitted int
	var err error
	if r.Calls == len(cp.Calls) {
		// The common case: a counted reservation of exactly these calls, which
		// the accounting row already counts as the group; the statement has no
		// part for the row at all. Any other reservation (a version 3 one, or
		// one of another size) is left in place and decided below.
		err = s.pool.QueryRow(ctx, admitExact, args...).Scan(&admitted)
	}
	if err == nil && admitted == 0 {
		err = s.pool.QueryRow(ctx, admitAny, args...).Scan(&admitted)
	}
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
