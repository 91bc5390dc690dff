package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/pgstore"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// Capacity with leases (migrations 4 and 7): limits large enough that
// reservations take from the replicas' leases, raced over two replicas up to
// the cap.

// turn is one tool turn of the store: Reserve then Admit, the reservation
// released when the admission fails, as the app does. A reservation made from
// a replica's lease is a promise of that replica only: near the cap another
// replica's exact decision may take the lease back, and the admission is then
// decided exactly, so a full store may refuse a turn at either step (the same
// 503, before any id is shown).
func turn(s *pgstore.Store, key string, calls int) error {
	r, err := s.Reserve(context.Background(), calls, porttest.T0)
	if err != nil {
		return err
	}
	if err := s.Admit(context.Background(), r, porttest.Group(key, "p1", calls, porttest.T0)); err != nil {
		_ = s.Release(context.Background(), r)
		return err
	}
	return nil
}

// checkLive checks that s counts want live groups and that the store's
// invariants hold.
func checkLive(t *testing.T, s *pgstore.Store, u string, l correlation.Limits, want int) {
	t.Helper()
	c, err := s.Counts(t.Context())
	if err != nil || c.LiveGroups != want {
		t.Fatalf("live groups %d (%v) vs %d expected", c.LiveGroups, err, want)
	}
	checkInvariants(t, u, l)
}

// raced numbers the groups of race, so that the races of one test have keys
// of their own.
var raced atomic.Int64

// race runs racers tool turns of calls calls each over the stores in turn
// and returns how many were admitted and refused.
func race(t *testing.T, stores []*pgstore.Store, racers, calls int) (admitted, refused int) {
	t.Helper()
	var ok, full atomic.Int64
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			err := turn(stores[i%len(stores)], fmt.Sprintf("g%05d", raced.Add(1)), calls)
			switch {
			case err == nil:
				ok.Add(1)
			case errs.Has(err, errs.CorrelationCapacityExceeded):
				full.Add(1)
			default:
				t.Errorf("turn: %v", err)
			}
		})
	}
	wg.Wait()
	return int(ok.Load()), int(full.Load())
}

func TestLeasedCapacityIsExactAcrossReplicas(t *testing.T) {
	for _, c := range []struct {
		name         string
		l            correlation.Limits
		calls, want  int
		racers, live int
	}{
		{name: "groups bound", l: correlation.Limits{MaxGroups: 300, MaxCalls: 10000}, calls: 1, racers: 420, want: 300},
		{name: "calls bound", l: correlation.Limits{MaxGroups: 1000, MaxCalls: 301}, calls: 2, racers: 420, want: 150},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			u := freshSchema(t)
			a, b := open(t, u, c.l, porttest.Policy), open(t, u, c.l, porttest.Policy)
			admitted, refused := race(t, []*pgstore.Store{a, b}, c.racers, c.calls)
			is.Equal(admitted, c.want)         // exactly the cap, not one more
			is.Equal(refused, c.racers-c.want) // and the leases refused none below it
			cnt, err := b.Counts(t.Context())
			is.NoErr(err)
			is.Equal(cnt.LiveGroups, c.want)
			is.Equal(cnt.LiveCalls, c.want*c.calls)
			is.Equal(cnt.ReservedGroups, 0)
			err = a.CheckRoom(t.Context(), "p-other", c.calls, porttest.T0)
			is.True(errs.Has(err, errs.CorrelationCapacityExceeded)) // no room
			checkInvariants(t, u, c.l)
		})
	}
}

func TestAReservationFarFromTheCapTakesFromALease(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 640, MaxCalls: 1280} // leases of 10 groups, 20 calls
	s := open(t, u, l, porttest.Policy)
	admit(t, s, porttest.Group("g1", "p1", 2, porttest.T0))
	var free, freeCalls, live, rows int
	query(t, u, `SELECT count(*), sum(free_groups), sum(free_calls) FROM correlation_leases`, &rows, &free, &freeCalls)
	is.Equal(rows, 1) // the replica's one lane
	query(t, u, `SELECT live_groups FROM correlation_usage`, &live)
	is.Equal(free, 9)       // one lease taken, one group from it
	is.Equal(freeCalls, 18) // and two calls
	is.Equal(live, 10)      // the row counts the whole lease
	c, err := s.Counts(t.Context())
	is.NoErr(err)
	is.Equal(c.LiveGroups, 1) // what the lease still holds is not in use
	is.Equal(c.LiveCalls, 2)
	checkInvariants(t, u, l)
}

func TestReleasedAndCompletedGroupsGiveLeasedCapacityBack(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 128, MaxCalls: 128} // leases of 2
	a, b := open(t, u, l, porttest.Policy), open(t, u, l, porttest.Policy)
	admitted, _ := race(t, []*pgstore.Store{a, b}, 140, 1)
	is.Equal(admitted, 128)
	is.True(errs.Has(turn(b, "full", 1), errs.CorrelationCapacityExceeded))
	// Completing one (admitted by either) frees its room for either replica.
	var done string
	query(t, u, `SELECT min(key) FROM correlation_groups`, &done)
	_, err := submit(a, porttest.Group(done, "p1", 1, porttest.T0), "a", porttest.T0)
	is.NoErr(err)
	_, err = a.Update(t.Context(), done, func(g *correlation.Group) (correlation.Decision, error) {
		return g.Complete(porttest.T0, porttest.Policy, nil, "d")
	})
	is.NoErr(err)
	admitted, refused := race(t, []*pgstore.Store{b, a}, 4, 1)
	is.Equal(admitted, 1) // that room only
	is.Equal(refused, 3)
	// A released reservation gives its room back.
	var last string
	query(t, u, `SELECT max(key) FROM correlation_groups WHERE state = 'PENDING'`, &last)
	_, err = submit(b, porttest.Group(last, "p1", 1, porttest.T0), "a", porttest.T0)
	is.NoErr(err)
	_, err = b.Update(t.Context(), last, func(g *correlation.Group) (correlation.Decision, error) {
		return g.Complete(porttest.T0, porttest.Policy, nil, "d")
	})
	is.NoErr(err)
	r, err := b.Reserve(t.Context(), 1, porttest.T0)
	is.NoErr(err)
	// b's reservation holds the room against b's own turns, whether b made it
	// in memory (the unit came back to a stripe b refilled from) or as a row.
	// Against a it holds only as a row: an exact decision of a takes back a
	// unit b promised in memory, and b's admission then decides exactly
	// (TestAReservationWhoseLeaseWasTakenBackIsDecidedExactly); which of the
	// two b made depends on the stripe the completion credited.
	is.True(errs.Has(turn(b, "while-held", 1), errs.CorrelationCapacityExceeded))
	is.NoErr(b.Release(t.Context(), r))
	is.NoErr(turn(a, "g9999", 1)) // released: a takes it
	checkLive(t, a, u, l, 128)
}

// A version 3 binary reserves without counting on the accounting row; during
// a rolling upgrade a version 4 check must add its reservations.
func TestAVersion3ReservationIsCountedDuringARollingUpgrade(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 130, MaxCalls: 1000} // leases of 2
	s := open(t, u, l, porttest.Policy)
	execOn(t, u, `INSERT INTO correlation_reservations (id, calls, expires_at)
		SELECT 'v3-' || i, 1, now() + interval '1 minute' FROM generate_series(1, 129) AS i`) // as version 3 does
	r, err := s.Reserve(t.Context(), 1, porttest.T0)
	is.NoErr(err) // the one unit left
	_, err = s.Reserve(t.Context(), 1, porttest.T0)
	is.True(errs.Has(err, errs.CorrelationCapacityExceeded))
	err = s.CheckRoom(t.Context(), "p-other", 1, porttest.T0)
	is.True(errs.Has(err, errs.CorrelationCapacityExceeded)) // no room
	is.NoErr(s.Admit(t.Context(), r, porttest.Group("g1", "p1", 1, porttest.T0)))
	// A version 3 reservation admitted here is added to the row.
	is.NoErr(s.Admit(t.Context(), ports.Reservation{ID: "v3-1", Calls: 1}, porttest.Group("g2", "p1", 1, porttest.T0)))
	c, err := s.Counts(t.Context())
	is.NoErr(err)
	is.Equal(c.LiveGroups, 2)
	is.Equal(c.ReservedGroups, 128)
	checkInvariants(t, u, l)
}

// A database at schema version 3 with a live group and an outstanding
// reservation migrates to version 4 with its counts intact.
func TestMigrationToVersion4KeepsAVersion3DatabasesCounts(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	migrateTo(t, u, 3)
	// Version 3's state: an outstanding reservation, not on the row.
	execOn(t, u, `INSERT INTO correlation_reservations (id, calls, expires_at) VALUES ('old', 2, now() + interval '1 minute')`)
	l := correlation.Limits{MaxGroups: 4, MaxCalls: 8}
	s := open(t, u, l, porttest.Policy)
	is.Equal(s.SchemaVersion(), pgstore.LatestVersion())
	admit(t, s, porttest.Group("g1", "p1", 2, porttest.T0))
	admit(t, s, porttest.Group("g2", "p1", 2, porttest.T0))
	r, err := s.Reserve(t.Context(), 2, porttest.T0)
	is.NoErr(err) // 2 live + 1 old reservation + this = 4 groups, 8 calls
	_, err = s.Reserve(t.Context(), 1, porttest.T0)
	is.True(errs.Has(err, errs.CorrelationCapacityExceeded))
	is.NoErr(s.Admit(t.Context(), ports.Reservation{ID: "old", Calls: 2}, porttest.Group("g3", "p1", 2, porttest.T0)))
	is.NoErr(s.Release(t.Context(), r))
	c, err := s.Counts(t.Context())
	is.NoErr(err)
	is.Equal(c.LiveGroups, 3)
	is.Equal(c.LiveCalls, 6)
	is.Equal(c.ReservedGroups, 0)
	checkInvariants(t, u, l)
}

// Leases taken under higher limits must not let a replica opened with lower
// ones pass its own.
func TestAReplicaOpenedWithLowerLimitsIsNotPassedByOldLeases(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	high := correlation.Limits{MaxGroups: 6400, MaxCalls: 6400} // leases of 64
	a := open(t, u, high, porttest.Policy)
	for i := range 130 {
		admit(t, a, porttest.Group(fmt.Sprintf("g%03d", i), "p1", 1, porttest.T0))
	}
	var free int
	query(t, u, `SELECT sum(free_groups) FROM correlation_leases`, &free)
	is.True(free > 0) // a holds leases
	low := correlation.Limits{MaxGroups: 128, MaxCalls: 128}
	b := open(t, u, low, porttest.Policy)
	for range 8 {
		_, err := b.Reserve(t.Context(), 1, porttest.T0)
		is.True(errs.Has(err, errs.CorrelationCapacityExceeded)) // 130 live ≥ 128
	}
	checkInvariants(t, u, low)
}

// Migration 5 replaces the call index's foreign key by a trigger: on a
// database of version 4 with a group, deleting groups (as version 4 binaries
// do during a rolling upgrade, by SQL alone) still deletes their index rows.
func TestMigrationToVersion5KeepsTheCallIndexCascade(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	migrateTo(t, u, 4)
	execOn(t, u, `INSERT INTO correlation_groups (key, principal_id, state, calls, issued_at, pending_expires_at, due_at, record)
		VALUES ('old', 'p1', 'PENDING', 2, now(), now(), now(), '\x01')`)
	execOn(t, u, `INSERT INTO correlation_calls (principal_id, public_id, group_key) VALUES ('p1', 'c1', 'old'), ('p1', 'c2', 'old')`)
	s := open(t, u, limits, porttest.Policy)
	is.True(s.SchemaVersion() >= 5)
	admit(t, s, porttest.Group("new", "p1", 2, porttest.T0))
	execOn(t, u, `DELETE FROM correlation_groups`) // one statement, two groups
	var n int
	query(t, u, `SELECT count(*) FROM correlation_calls`, &n)
	is.Equal(n, 0) // every index row went with its group
}

// Admit takes its one-statement path only for a counted reservation of
// exactly the group's calls; any other is decided by the full statement.
func TestAReservationOfAnotherSizeIsAdmittedExactly(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 640, MaxCalls: 1280} // leases
	s := open(t, u, l, porttest.Policy)
	big, err := s.Reserve(t.Context(), 3, porttest.T0)
	is.NoErr(err)
	is.NoErr(s.Admit(t.Context(), big, porttest.Group("g1", "p1", 2, porttest.T0))) // the unused call is given back
	small, err := s.Reserve(t.Context(), 1, porttest.T0)
	is.NoErr(err)
	err = s.Admit(t.Context(), small, porttest.Group("g2", "p1", 2, porttest.T0))
	is.True(errs.Has(err, errs.CorrelationCapacityExceeded)) // too small: nothing changed
	lied := ports.Reservation{ID: small.ID, Calls: 2}        // a caller's size is not trusted
	err = s.Admit(t.Context(), lied, porttest.Group("g2", "p1", 2, porttest.T0))
	is.True(errs.Has(err, errs.CorrelationCapacityExceeded))
	c, err := s.Counts(t.Context())
	is.NoErr(err)
	is.Equal(c.LiveGroups, 1)
	is.Equal(c.LiveCalls, 2)
	is.Equal(c.ReservedGroups, 1) // the small one, still held
	is.Equal(c.ReservedCalls, 1)
	checkInvariants(t, u, l)
}

// migrateTo brings the fresh schema u to exactly version (the migration files
// up to it, recorded as an earlier binary records them), as a database an
// older release left behind.
func migrateTo(t *testing.T, u string, version int) {
	t.Helper()
	is := is.New(t)
	files, err := filepath.Glob("migrations/*.sql")
	is.NoErr(err)
	sort.Strings(files)
	is.True(len(files) >= version)
	execOn(t, u, `CREATE TABLE `+pgstore.MigrationsTable+` (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	for i, f := range files[:version] {
		sql, err := os.ReadFile(f)
		is.NoErr(err)
		execOn(t, u, string(sql))
		execOn(t, u, `INSERT INTO `+pgstore.MigrationsTable+` (version, name) VALUES ($1, $2)`, i+1, fmt.Sprintf("v%d", version))
	}
}

// A reservation made in memory is a promise of its replica: that replica's own
// exact decisions near the cap keep its units.
func TestAReservationHeldInMemoryIsKeptByItsReplicasExactDecisions(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 128, MaxCalls: 128} // leases of 2
	s := open(t, u, l, porttest.Policy)
	r, err := s.Reserve(t.Context(), 1, porttest.T0)
	is.NoErr(err)
	for i := range 127 {
		is.NoErr(turn(s, fmt.Sprintf("g%03d", i), 1))
	}
	is.True(errs.Has(turn(s, "over", 1), errs.CorrelationCapacityExceeded)) // full, the held reservation counted
	c, err := s.Counts(t.Context())
	is.NoErr(err)
	is.Equal(c.LiveGroups, 127)
	is.Equal(c.ReservedGroups, 1)
	err = s.CheckRoom(t.Context(), "p-other", 1, porttest.T0)
	is.True(errs.Has(err, errs.CorrelationCapacityExceeded))                        // no room
	is.NoErr(s.Admit(t.Context(), r, porttest.Group("held", "p1", 1, porttest.T0))) // and admitted
	checkInvariants(t, u, l)
}

// Another replica's exact decision takes a lease back, held units included;
// the reservation is then admitted by an exact decision of its own: when
// there is room, and only then.
func TestAReservationWhoseLeaseWasTakenBackIsDecidedExactly(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 128, MaxCalls: 128} // leases of 2
	a, b := open(t, u, l, porttest.Policy), open(t, u, l, porttest.Policy)
	r1, err := a.Reserve(t.Context(), 1, porttest.T0)
	is.NoErr(err)
	r2, err := a.Reserve(t.Context(), 1, porttest.T0)
	is.NoErr(err)
	for i := range 127 {
		is.NoErr(turn(b, fmt.Sprintf("g%03d", i), 1)) // b's exact decisions take a's lease back
	}
	is.NoErr(a.Admit(t.Context(), r1, porttest.Group("r1", "p1", 1, porttest.T0))) // the last unit, decided exactly
	err = a.Admit(t.Context(), r2, porttest.Group("r2", "p1", 1, porttest.T0))
	is.True(errs.Has(err, errs.CorrelationCapacityExceeded)) // full: refused, before any id is shown
	is.NoErr(a.Release(t.Context(), r2))
	checkLive(t, b, u, l, 128) // exactly the cap
}

// A replica that dies leaves its lease rows: the next exact decision takes
// their units back, and deletes them once they expired.
func TestADeadReplicasLeaseIsTakenBackAndExpires(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 128, MaxCalls: 128} // leases of 2
	dead := open(t, u, l, porttest.Policy, pgstore.WithReservationTTL(300*time.Millisecond))
	is.NoErr(turn(dead, "d1", 1))
	_, err := dead.Reserve(t.Context(), 1, porttest.T0) // held when it dies
	is.NoErr(err)
	dead.Kill()
	live := open(t, u, l, porttest.Policy)
	for i := range 127 {
		is.NoErr(turn(live, fmt.Sprintf("g%03d", i), 1)) // the dead lease's units, the held one included
	}
	is.True(errs.Has(turn(live, "over", 1), errs.CorrelationCapacityExceeded))
	time.Sleep(400 * time.Millisecond)
	is.True(errs.Has(turn(live, "over", 1), errs.CorrelationCapacityExceeded)) // an exact decision after the expiry
	var expired int
	query(t, u, `SELECT count(*) FROM correlation_leases WHERE expires_at <= now()`, &expired)
	is.Equal(expired, 0) // deleted
	checkInvariants(t, u, l)
}

// An admission from a lease that fails midway leaves the lease row as it was,
// and the reservation usable.
func TestALeasedAdmissionThatFailsMidwayWritesNothing(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 640, MaxCalls: 1280, ResponseCacheBytes: 1 << 20} // leases
	s := open(t, u, l, porttest.Policy)
	admit(t, s, porttest.Group("g1", "p1", 2, porttest.T0))
	failOn(t, u, "correlation_calls", "INSERT", "NEW.public_id LIKE 'call_pmn_boom%'")
	r, err := s.Reserve(t.Context(), 2, porttest.T0)
	is.NoErr(err)
	before := snapshot(t, u)
	err = s.Admit(t.Context(), r, porttest.Group("boom", "p1", 2, porttest.T0))
	is.Equal(errs.CodeOf(err), errs.CorrelationStoreUnavailable)
	is.Equal(snapshot(t, u), before)
	is.NoErr(s.Admit(t.Context(), r, porttest.Group("g2", "p1", 2, porttest.T0))) // the reservation is still held
	c, err := s.Counts(t.Context())
	is.NoErr(err)
	is.Equal(c.LiveGroups, 2)
	is.Equal(c.ReservedGroups, 0)
	checkInvariants(t, u, l)
}

// version6Reserve is the exact decision of a version 6 binary (its
// reserveExact, which knows nothing of the replicas' leases): lock the row and
// the stripes, take the stripes' leases and the expired reservations back,
// then a conditional increment of the row and the reservation's insert.
var version6Reserve = []string{
	`SELECT 1 FROM correlation_usage WHERE id FOR UPDATE`,
	`SELECT 1 FROM correlation_usage_stripes ORDER BY stripe FOR UPDATE`,
	`WITH back AS (
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
	FROM d WHERE u.id AND (d.groups > 0 OR d.calls > 0)`,
	`WITH acc AS (
		UPDATE correlation_usage u SET live_groups = u.live_groups + 1, live_calls = u.live_calls + 1
		FROM (SELECT count(*) AS groups, coalesce(sum(calls), 0) AS calls FROM correlation_reservations
			WHERE NOT counted AND expires_at > now()) r
		WHERE u.id AND u.live_groups + r.groups + 1 <= 128 AND u.live_calls + r.calls + 1 <= 128
		RETURNING 1
	)
	INSERT INTO correlation_reservations (id, calls, expires_at, counted)
	SELECT 'v6-' || gen_random_uuid(), 1, now() + interval '1 minute', true FROM acc`,
}

// version6Reserves runs version6Reserve in one transaction and reports
// whether it reserved.
func version6Reserves(t *testing.T, u string) bool {
	t.Helper()
	var n int64
	onConn(t, u, "version 6 reserve", func(ctx context.Context, conn *pgx.Conn) error {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		for _, sql := range version6Reserve {
			tag, err := tx.Exec(ctx, sql)
			if err != nil {
				return err
			}
			n = tag.RowsAffected()
		}
		return tx.Commit(ctx)
	})
	return n == 1
}

// During a rolling upgrade a version 6 replica runs beside version 7 ones: it
// counts their leases' free units as used (stricter), never less.
func TestAVersion6ReplicaBesideVersion7IsStricterNeverLooser(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 128, MaxCalls: 128} // leases of 2
	s := open(t, u, l, porttest.Policy)
	is.NoErr(turn(s, "g0", 1)) // s leases 2 and uses one
	var groups []correlation.Group
	for i := range 126 {
		groups = append(groups, porttest.Group(fmt.Sprintf("g%03d", i+1), "p1", 1, porttest.T0))
	}
	is.NoErr(s.LoadPending(t.Context(), groups)) // 127 live, 1 unit free on s's lease
	is.True(!version6Reserves(t, u))             // version 6 counts that unit as used: stricter
	is.NoErr(turn(s, "last", 1))                 // version 7 takes it
	is.True(!version6Reserves(t, u))             // full
	is.True(errs.Has(turn(s, "over", 1), errs.CorrelationCapacityExceeded))
	checkLive(t, s, u, l, 128)
}

// Completions give units to the stripes while the replicas refill their
// leases from them: tool turns and completions racing on two replicas keep
// every count exact.
func TestToolTurnsRacingCompletionsKeepTheCountsExact(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 640, MaxCalls: 1280, ResponseCacheBytes: 1 << 20} // leases of 10
	stores := []*pgstore.Store{open(t, u, l, porttest.Policy), open(t, u, l, porttest.Policy)}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			s := stores[w%2]
			for i := range 40 {
				g := porttest.Group(fmt.Sprintf("w%02d-%02d", w, i), "p1", 2, porttest.T0)
				if err := turn(s, g.Key, 2); err != nil {
					t.Errorf("turn: %v", err)
					return
				}
				if _, err := submit(s, g, "a", porttest.T0); err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if _, err := s.Update(context.Background(), g.Key, func(gr *correlation.Group) (correlation.Decision, error) {
					return gr.Complete(porttest.T0, porttest.Policy, nil, "d")
				}); err != nil {
					t.Errorf("complete: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	c, err := stores[0].Counts(t.Context())
	is.NoErr(err)
	is.Equal(c.LiveGroups, 0)
	is.Equal(c.ByState[correlation.Consumed], 16*40)
	checkInvariants(t, u, l)
}
