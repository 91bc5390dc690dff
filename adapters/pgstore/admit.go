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
// serialized; the design (migrations 4 and 7) serializes as little as it can:
//
//   - The accounting row counts everything taken from the capacity: live
//     groups, counted reservations, and the free capacity leased to the
//     stripes and to the replicas' lease rows. Only a reservation or a lease
//     raises it, under its lock.
//   - A reservation far from the limits is made in this replica's memory,
//     against a lease row of its own (one of lanes): no statement. Admit then
//     takes the unit off that row with a conditional decrement, in the one
//     statement that inserts the group. A lane with no room is refilled from a
//     stripe (units completed groups gave back; that stripe's lock only) or
//     from the row (its lock, once per lease of up to leaseGroups). Units taken
//     from a lease were counted on the row before, so the sum can never pass
//     the cap, whatever the replicas do at once.
//   - When no lease can be had (near the cap), the reservation locks the row,
//     every stripe and every lease row, takes back every unit not held by this
//     replica's reservations in memory, reclaims expired reservations and
//     leases, and decides on the row exactly (a reservation row). Leases never
//     cause a refusal: only that exact check refuses. A replica whose lease
//     was taken back this way finds its admission's decrement refused, and
//     decides that admission exactly instead (Admit).
//
// Striped counters summed on read would not do: a check near the cap must see
// every stripe, and a sum read without their locks lets two replicas both pass
// the last unit.
func (s *Store) Reserve(ctx context.Context, calls int, now time.Time) (ports.Reservation, error) {
	if calls <= 0 || calls > s.limits.MaxCalls {
		return ports.Reservation{}, errs.Newf(errs.CorrelationCapacityExceeded, "group of %d calls", calls)
	}
	if lg, lc := s.lease(calls); lg > 0 {
		if r, ok := s.leases.take(calls, s.opt.reservationTTL); ok {
			return r, nil
		}
		k := s.leases.idle()
		ok, err := s.refill(ctx, k, calls, lg, lc)
		if err != nil {
			return ports.Reservation{}, err
		}
		if ok {
			if r, ok := s.leases.takeFrom(k, calls, s.opt.reservationTTL); ok {
				return r, nil
			}
		}
	}
	return s.reserveRow(ctx, calls, now)
}

// reserveRow reserves exactly, as a reservation row: decided on the
// accounting row with every lease taken back, then once more after a sweep.
func (s *Store) reserveRow(ctx context.Context, calls int, now time.Time) (ports.Reservation, error) {
	id, err := newID()
	if err != nil {
		return ports.Reservation{}, err
	}
	ok, err := s.reserveExact(ctx, id, calls)
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

// lease is the capacity one refill moves to a lane: a quarter of the capacity
// spread over the stripes' count of lanes, at most 64 groups, and calls in
// the limits' proportion (at least this group's). Below two groups a lease
// saves nothing and every reservation decides exactly.
func (s *Store) lease(calls int) (groups, leaseCalls int) {
	groups = min(64, s.limits.MaxGroups/(4*stripes))
	if s.opt.leaseGroups > 0 {
		groups = s.opt.leaseGroups
	}
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
// (sendReserve says why that is safe for reservations and leases).
const asyncCommit = `set_config('synchronous_commit', 'off', true)`

// The statements that decide exactly: the locks, taken in the one order every
// writer uses (the row, then stripes by number, then lease rows by id; a
// writer that holds a lease row's lock never waits for another), then every
// lease taken back and the expired reservations and leases reclaimed (a
// replica died, or failed, between reserving and admitting; reservations a
// concurrent admission or release holds are skipped, never waited for).
//
// takeBack's arguments are this replica's lease row ids and what each must
// keep ($2 groups, $3 calls): the reservations it holds in memory, which it
// has promised. Every other lease row is emptied, deleted once past its
// expiry (its replica is gone: nothing renewed it). Each statement after the
// locks takes its snapshot once they are held (READ COMMITTED), so the lease
// rows read as o are the ones locked.
const (
	lockRow     = `SELECT 1 FROM correlation_usage WHERE id FOR UPDATE`
	lockStripes = `SELECT 1 FROM correlation_usage_stripes ORDER BY stripe FOR UPDATE`
	lockLeases  = `SELECT 1 FROM correlation_leases ORDER BY id FOR UPDATE`
	takeBack    = `WITH keep AS (
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS k(id, groups, calls)
		), back AS (
			SELECT coalesce(sum(free_groups), 0) AS groups, coalesce(sum(free_calls), 0) AS calls FROM correlation_usage_stripes
		), zero AS (
			UPDATE correlation_usage_stripes SET free_groups = 0, free_calls = 0 WHERE free_groups > 0 OR free_calls > 0
		), dead AS (
			DELETE FROM correlation_leases l WHERE l.expires_at <= now() AND NOT EXISTS (SELECT 1 FROM keep WHERE keep.id = l.id)
			RETURNING l.free_groups AS groups, l.free_calls AS calls
		), taken AS (
			UPDATE correlation_leases l SET free_groups = least(o.free_groups, coalesce(k.groups, 0)),
				free_calls = least(o.free_calls, coalesce(k.calls, 0))
			FROM correlation_leases o LEFT JOIN keep k ON k.id = o.id
			WHERE l.id = o.id AND (o.expires_at > now() OR k.id IS NOT NULL)
				AND (o.free_groups > coalesce(k.groups, 0) OR o.free_calls > coalesce(k.calls, 0))
			RETURNING o.free_groups - least(o.free_groups, coalesce(k.groups, 0)) AS groups,
				o.free_calls - least(o.free_calls, coalesce(k.calls, 0)) AS calls
		), gone AS (
			DELETE FROM correlation_reservations WHERE id IN
				(SELECT id FROM correlation_reservations WHERE expires_at <= now() FOR UPDATE SKIP LOCKED)
			RETURNING calls, counted
		), d AS (
			SELECT back.groups + (SELECT count(*) FROM gone WHERE counted)
			         + (SELECT coalesce(sum(groups), 0) FROM dead) + (SELECT coalesce(sum(groups), 0) FROM taken) AS groups,
			       back.calls + (SELECT coalesce(sum(calls), 0) FROM gone WHERE counted)
			         + (SELECT coalesce(sum(calls), 0) FROM dead) + (SELECT coalesce(sum(calls), 0) FROM taken) AS calls FROM back
		)
		UPDATE correlation_usage u SET live_groups = u.live_groups - d.groups, live_calls = u.live_calls - d.calls
		FROM d WHERE u.id AND (d.groups > 0 OR d.calls > 0)`
)

// takeBackStmts are the locks and takeBack, keeping what this replica's
// reservations in memory hold; done records the outcome in memory once the
// statements succeeded.
func (s *Store) takeBackStmts() (stmts []stmt, done func()) {
	keepGroups, keepCalls := s.leases.keep()
	return []stmt{{sql: lockRow}, {sql: lockStripes}, {sql: lockLeases},
		{sql: takeBack, args: []any{s.leases.ids(), keepGroups, keepCalls}}}, func() { s.leases.keptOnly(keepGroups, keepCalls) }
}

// reserveExact decides on the accounting row with every lease taken back: a
// conditional increment of the row and the reservation's insert, counting
// every committed reservation and lease.
func (s *Store) reserveExact(ctx context.Context, id string, calls int) (bool, error) {
	stmts, done := s.takeBackStmts()
	ok, err := s.sendReserve(ctx, "reserve", append(stmts,
		stmt{sql: `WITH acc AS (
				UPDATE correlation_usage u SET live_groups = u.live_groups + 1, live_calls = u.live_calls + $2::integer
				FROM ` + uncounted + ` r
				WHERE u.id AND u.live_groups + r.groups + 1 <= $4::bigint AND u.live_calls + r.calls + $2::integer <= $5::bigint
				RETURNING 1
			)
			INSERT INTO correlation_reservations (id, calls, expires_at, counted)
			SELECT $1::text, $2::integer, now() + make_interval(secs => $3::float8), true FROM acc`,
			args: []any{id, calls, s.opt.reservationTTL.Seconds(), s.limits.MaxGroups, s.limits.MaxCalls}})...)
	if err == nil {
		done()
	}
	return ok, err
}

// takeLeasesBack returns every lease to the accounting row, at Open: leases
// taken under other limits (a restart with lower ones) must not let this
// replica pass its own.
func (s *Store) takeLeasesBack(ctx context.Context) error {
	stmts, done := s.takeBackStmts()
	_, err := s.sendReserve(ctx, "open: take the leases back", stmts...)
	if err == nil {
		done()
	}
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
		b.Queue(`SELECT ` + asyncCommit)
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

// CheckRoom implements ports.CorrelationStore, as
// correlation.Registry.CheckRoom: one unlocked read with the predicate of
// reserveExact, counting what the row's count holds but a reservation could
// still have (the leases, the expired reservations) as room, and, when the
// limits set a share, the principal's live groups (the rule Admit decides
// exactly); when either is full, overdue groups are swept and it looks once
// more. Nothing is written but the sweep.
func (s *Store) CheckRoom(ctx context.Context, principalID string, calls int, now time.Time) error {
	if calls <= 0 || calls > s.limits.MaxCalls {
		return errs.Newf(errs.CorrelationCapacityExceeded, "group of %d calls", calls)
	}
	room, err := s.roomNow(ctx, principalID, calls)
	if err == nil && (!room.pool || !room.key) {
		if _, err = s.Sweep(ctx, now); err == nil {
			room, err = s.roomNow(ctx, principalID, calls)
		}
	}
	switch {
	case err != nil:
		return err
	case !room.key:
		return correlation.RefuseShare(s.limits, room.first, now)
	case !room.pool:
		return errs.New(errs.CorrelationCapacityExceeded)
	}
	return nil
}

// room is what roomNow read: whether the pool and the key's share have room,
// and the first deadline of the key's live groups (zero when none, or
// without a share).
type room struct {
	pool, key bool
	first     time.Time
}

// keyLive is the live groups of the principal in parameter p, their calls
// and their first deadline, as the relation k (migration 8's index).
func keyLive(p string) string {
	return `(SELECT count(*) AS groups, coalesce(sum(calls), 0) AS calls,
		min(CASE state WHEN 'PENDING' THEN pending_expires_at ELSE inflight_expires_at END) AS first
	FROM correlation_groups WHERE principal_id = ` + p + `::text AND state IN ('PENDING', 'INFLIGHT')) k`
}

func (s *Store) roomNow(ctx context.Context, principalID string, calls int) (room, error) {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	og, oc := s.leases.outstanding()
	var rm room
	var kg, kc int
	var first *time.Time
	key, from, args := `0::bigint, 0::bigint, NULL::timestamptz`, ``, []any{s.limits.MaxGroups, calls, s.limits.MaxCalls, og, oc}
	if s.limits.Shared() {
		key, from, args = `k.groups, k.calls, k.first`, `, `+keyLive("$6"), append(args, principalID)
	}
	// r is what the row's count lacks: + uncounted live reservations, − counted
	// expired ones; f the leases, less what this replica's reservations in
	// memory hold of them.
	err := s.pool.QueryRow(ctx, `SELECT u.live_groups + r.groups - f.groups + $4::bigint + 1 <= $1::bigint
			AND u.live_calls + r.calls - f.calls + $5::bigint + $2::integer <= $3::bigint, `+key+`
		FROM correlation_usage u,
		     (SELECT count(*) FILTER (WHERE NOT counted AND expires_at > now()) - count(*) FILTER (WHERE counted AND expires_at <= now()) AS groups,
		             coalesce(sum(calls) FILTER (WHERE NOT counted AND expires_at > now()), 0)
		               - coalesce(sum(calls) FILTER (WHERE counted AND expires_at <= now()), 0) AS calls
		      FROM correlation_reservations) r,
		     (SELECT coalesce(sum(free_groups), 0) + (SELECT coalesce(sum(free_groups), 0) FROM correlation_leases) AS groups,
		             coalesce(sum(free_calls), 0) + (SELECT coalesce(sum(free_calls), 0) FROM correlation_leases) AS calls
		      FROM correlation_usage_stripes) f`+from+`
		WHERE u.id`, args...).Scan(&rm.pool, &kg, &kc, &first)
	if err != nil {
		return room{}, unavailable(err, "has room")
	}
	rm.key = s.limits.KeyFits(kg, kc, calls)
	if first != nil {
		rm.first = *first
	}
	return rm, nil
}

// The admission statements (admitSQL): admitLeased for a reservation made in
// memory, which takes the group's units off its lease row; admitExact for a
// counted reservation row of exactly the group's calls, which writes nothing
// else; admitAny for any reservation row that covers them, which also gives
// the accounting row what the group does not use of a counted one, or adds the
// group for an uncounted one (version 3). Each comes in two forms (admission,
// indexed by whether the limits set a per-key share): the shared one admits
// only while the principal's live groups leave room in its share.
var (
	admitLeased = admitSQL(`UPDATE correlation_leases SET free_groups = free_groups - 1, free_calls = free_calls - $2::integer,
				expires_at = now() + make_interval(secs => {ttl}::float8)
			WHERE id = $1::text AND free_groups >= 1 AND free_calls >= $2::integer {key}
			RETURNING true AS counted`, ``)
	admitExact = admitSQL(reservationRow(`AND counted AND calls = $2::integer {key}`), ``)
	admitAny   = admitSQL(reservationRow(`AND calls >= $2::integer {key}`), `, acc AS (
			UPDATE correlation_usage u SET live_groups = u.live_groups + d.groups, live_calls = u.live_calls + d.calls
			FROM (SELECT CASE WHEN res.counted THEN 0 ELSE 1 END AS groups,
			             CASE WHEN res.counted THEN $2::integer - res.calls ELSE $2::integer END AS calls
			      FROM res, grp) d
			WHERE u.id AND (d.groups <> 0 OR d.calls <> 0)
		)`)
)

// admission is one admission statement in its two forms.
type admission [2]string

// of is the form for limits with a share (true) or without.
func (a admission) of(shared bool) string {
	if shared {
		return a[1]
	}
	return a[0]
}

// reservationRow consumes reservation row $1 when it qualifies (not expired,
// and cond).
func reservationRow(cond string) string {
	return `DELETE FROM correlation_reservations WHERE id = $1::text AND expires_at > now() ` + cond + ` RETURNING calls, counted`
}

// admitSQL is the admission statement: res, what the group is admitted
// under (no row: not admitted), the group row and its call index rows
// inserted from it, and the parts in extra; it returns how many groups it
// inserted (0 or 1) and whether the principal's share refused it.
//
// The shared form counts the principal's ($4) live groups, kl (at most its
// share, $13 groups; $14 calls), and takes res only while they leave room for
// this one: the key's refusal changes nothing, not even the lease. Its
// snapshot is taken after the principal's advisory lock (lockKey, the
// statement before it in one transaction), so it sees every group an
// admission of the same principal committed before: admissions of one key
// are serialized, the share decided exactly. {ttl}, a lease's TTL, is the
// parameter after the share's.
func admitSQL(res, extra string) admission {
	body := `res AS (
			` + res + `
		), grp AS (
			INSERT INTO correlation_groups
				(key, principal_id, state, calls, issued_at, pending_expires_at, inflight_expires_at, terminal_expires_at, due_at, record)
			SELECT $3::text, $4::text, $5::text, $2::integer, $6::timestamptz, $7::timestamptz, $8::timestamptz,
				$9::timestamptz, $10::timestamptz, $11::bytea FROM res
			RETURNING key
		), idx AS (
			INSERT INTO correlation_calls (principal_id, public_id, group_key)
			SELECT $4::text, id, grp.key FROM grp, unnest($12::text[]) AS id
		)` + extra
	plain := strings.NewReplacer("{key}", "", "{ttl}", "$13").Replace(`WITH ` + body + `
		SELECT count(*), false FROM grp`)
	shared := strings.NewReplacer("{key}", "AND (SELECT room FROM kl)", "{ttl}", "$15").Replace(`WITH kl AS (
			SELECT count(*) < $13::bigint AND coalesce(sum(calls), 0) + $2::integer <= $14::bigint AS room
			FROM (SELECT calls FROM correlation_groups WHERE principal_id = $4::text AND state IN ('PENDING', 'INFLIGHT')
			      LIMIT $13::bigint) live
		), ` + body + `
		SELECT count(*), NOT (SELECT room FROM kl) FROM grp`)
	return admission{plain, shared}
}

// lockKey serializes the admissions of one principal ($1) for the rest of
// its transaction (admitSQL's shared form). A hash shared by two principals
// only serializes them too.
const lockKey = `SELECT pg_advisory_xact_lock(hashtextextended('pmgate.pgstore.key/' || $1::text, 0))`

// Release implements ports.CorrelationStore. A reservation made in memory is
// forgotten (its units stay free on the lease). A reservation row is deleted
// and a counted one given to the lease of a stripe chosen at random, as a
// completed group's capacity is given back (usageStmt: the row keeps counting
// the units, now as a lease, so it stays exact), in one statement; an unknown
// reservation is not an error. Errors: correlation_store_unavailable (the
// reservation row then frees itself at its expiry).
func (s *Store) Release(ctx context.Context, r ports.Reservation) error {
	if s.leases.release(r.ID) {
		return nil
	}
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
// statement — atomic on its own — takes the group's units from what it is
// admitted under and writes the group row and its call index rows:
//
//   - a reservation made in memory (the common case): its lease row gives one
//     group and the group's calls (admitLeased); what the reservation held
//     beyond them stays on the lease. When the row refuses (its lease was
//     taken back by an exact decision near the cap), the admission is decided
//     exactly instead: a reservation row is made as Reserve makes one near
//     the cap, and the group admitted under it — refused only when the store
//     is full now;
//   - a reservation row: admitExact, and admitAny when that one found no
//     counted reservation of exactly the group's calls; the accounting row
//     already counts the reservation, so it is written only when the group
//     has fewer calls than its reservation (the difference is given back) or
//     the reservation is one of a version 3 binary (not counted: the group is
//     added).
//
// When the reservation does not qualify it changes nothing. A public id
// already indexed for the principal fails with correlation.ErrDuplicatePublicID
// and leaves the reservation in place for the caller's next attempt.
func (s *Store) Admit(ctx context.Context, r ports.Reservation, g correlation.Group) error {
	if len(g.Calls) == 0 {
		return errs.New(errs.CorrelationCapacityExceeded)
	}
	h, mine := s.leases.claim(r.ID)
	if !mine {
		return s.admitRow(ctx, r, g)
	}
	var err error
	switch {
	case len(g.Calls) > h.calls:
		err = errs.New(errs.CorrelationCapacityExceeded) // too small: nothing changed
	case g.State != correlation.Pending:
		err = errors.AssertionFailedf("correlation: admitted group must be PENDING")
	case g.Key == "":
		err = errors.AssertionFailedf("correlation: group key missing or reused")
	}
	if err != nil {
		s.leases.unclaim(r.ID, h)
		return err
	}
	admitted, keyFull, err := s.admitOnce(ctx, admitLeased, s.leases.id(h.lane), g, s.opt.reservationTTL.Seconds())
	if err == nil && keyFull {
		err = s.refuseShare(ctx, g)
	}
	if err != nil {
		s.leases.unclaim(r.ID, h) // nothing changed (or, a commit whose reply was lost: the row is then lower than believed, which is stricter)
		return err
	}
	s.leases.settle(h, admitted, len(g.Calls))
	if admitted {
		return nil
	}
	exact, err := s.reserveRow(ctx, len(g.Calls), g.IssuedAt)
	if err != nil {
		return err
	}
	if err := s.admitRow(ctx, exact, g); err != nil {
		// The reservation is spent either way: a public id collision here
		// (192 random bits, near the cap, after a lease was taken back) makes
		// the caller's next attempt answer correlation_capacity_exceeded, a
		// refusal before any id is shown.
		_ = s.Release(context.WithoutCancel(ctx), exact)
		return err
	}
	return nil
}

// admitRow admits g under reservation row r.
func (s *Store) admitRow(ctx context.Context, r ports.Reservation, g correlation.Group) error {
	if g.State != correlation.Pending || g.Key == "" {
		// A mis-built group: the registry answers capacity first when the
		// reservation does not qualify, then the assertion.
		ctx, cancel := s.opContext(ctx)
		defer cancel()
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
	admitted, keyFull := false, false
	var err error
	if r.Calls == len(g.Calls) {
		// The common case: a counted reservation of exactly these calls, which
		// the accounting row already counts as the group; the statement has no
		// part for the row at all. Any other reservation (a version 3 one, or
		// one of another size) is left in place and decided below.
		admitted, keyFull, err = s.admitOnce(ctx, admitExact, r.ID, g)
	}
	if err == nil && !admitted && !keyFull {
		admitted, keyFull, err = s.admitOnce(ctx, admitAny, r.ID, g)
	}
	if err == nil && keyFull {
		return s.refuseShare(ctx, g) // the reservation stays for the caller to release
	}
	if err == nil && !admitted {
		return errs.New(errs.CorrelationCapacityExceeded) // no such reservation, expired, or too small: nothing changed
	}
	return err
}

// refuseShare is the share refusal of g's principal at g.IssuedAt (as the
// registry's), with the first deadline of its live groups.
func (s *Store) refuseShare(ctx context.Context, g correlation.Group) error {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	var first *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT k.first FROM `+keyLive("$1"), g.PrincipalID).Scan(&first); err != nil {
		return unavailable(err, "admit: key share")
	}
	var f time.Time
	if first != nil {
		f = *first
	}
	return correlation.RefuseShare(s.limits, f, g.IssuedAt)
}

// admitOnce runs one admission statement (admitSQL) for g under from (a
// reservation or lease row id; more are the statement's arguments after the
// group's and the share's) and reports whether it inserted the group, and
// whether the principal's share refused it. With a share, the principal's
// advisory lock (lockKey) is taken first, in the same transaction.
func (s *Store) admitOnce(ctx context.Context, a admission, from string, g correlation.Group, more ...any) (admitted, keyFull bool, err error) {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	ids := make([]string, 0, len(g.Calls))
	seen := make(map[string]bool, len(g.Calls))
	for _, c := range g.Calls { // as the registry's index: one entry per distinct id
		if !seen[c.PublicID] {
			seen[c.PublicID] = true
			ids = append(ids, c.PublicID)
		}
	}
	args := []any{from, len(g.Calls), g.Key, g.PrincipalID, string(g.State), g.IssuedAt, g.PendingExpiresAt,
		nullTime(g.InflightExpiresAt), nullTime(g.TerminalExpiresAt), dueAt(&g), encodeRecord(&g), ids}
	shared := s.limits.Shared()
	if shared {
		sg, sc := s.limits.Share()
		args = append(args, sg, sc)
	}
	args = append(args, more...)
	var n int
	if shared {
		b := &pgx.Batch{}
		b.Queue(lockKey, g.PrincipalID)
		b.Queue(a.of(true), args...)
		_, err = s.sendScan(ctx, b, &n, &keyFull)
	} else {
		err = s.pool.QueryRow(ctx, a.of(false), args...).Scan(&n, &keyFull)
	}
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "correlation_calls_pkey":
		return false, false, errors.Mark(errors.New("correlation: public id collision"), correlation.ErrDuplicatePublicID)
	case errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "correlation_groups_pkey":
		return false, false, errors.AssertionFailedf("correlation: group key missing or reused")
	case err != nil:
		return false, false, unavailable(err, "admit")
	}
	return n == 1, keyFull, nil
}
