package pgstore

// Admission: capacity is reserved before any public id is shown, and a group
// is admitted under its reservation.

import (
	"context"
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
