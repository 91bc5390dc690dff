package pgstore

// A replica's leases (migration 7): capacity counted on the accounting row
// and held by this process in lease rows of its own, one per lane, so that a
// reservation far from the limits is made in memory and its admission is one
// statement.

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pmgate/pmgate/ports"
)

// lanes is the number of lease rows of one replica: as many as admissions it
// runs at once (DefaultMaxConns), so that an admission, which holds its
// lease row's lock through its commit (the WAL flush with durable commits),
// finds a lane of its own.
const lanes = DefaultMaxConns

// leases is what this process knows of its lease rows. It is a hint, never a
// decision: the row is changed only by conditional statements, so a lease
// taken back by another replica's exact decision, or a belief that is off for
// any other reason, can only make an admission refused by its row and then
// decided exactly (Admit), never pass a limit.
type leases struct {
	owner string // this replica's random id: its rows are owner/lane

	mu   sync.Mutex
	lane [lanes]lane
	held map[string]held // the reservations made in memory, by id
	seq  uint64
}

type lane struct {
	free, freeCalls int // what the lane's row holds, as this process last knew it
	out, outCalls   int // held by reservations not yet admitted or released
	busy            int // admissions in flight on the row
	refilling       bool
}

// held is one reservation made in memory, of calls calls on lane; it is
// forgotten at deadline (a caller that never admitted nor released it).
type held struct {
	lane, calls int
	deadline    time.Time
}

func (l *lane) room(calls int) bool { return l.free-l.out >= 1 && l.freeCalls-l.outCalls >= calls }

func newLeases(owner string) *leases {
	return &leases{owner: owner, held: map[string]held{}}
}

func (ls *leases) id(k int) string { return ls.owner + "/" + strconv.Itoa(k) }

// take reserves calls in memory from a lane with room, preferring one with no
// admission in flight; ok is false when no lane has room.
func (ls *leases) take(calls int, ttl time.Duration) (r ports.Reservation, ok bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	k := ls.pick(calls)
	if k < 0 {
		ls.forgetExpired()
		if k = ls.pick(calls); k < 0 {
			return ports.Reservation{}, false
		}
	}
	return ls.hold(k, calls, ttl), true
}

// takeFrom reserves calls in memory from lane k (just refilled).
func (ls *leases) takeFrom(k, calls int, ttl time.Duration) (r ports.Reservation, ok bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if !ls.lane[k].room(calls) {
		return ports.Reservation{}, false
	}
	return ls.hold(k, calls, ttl), true
}

func (ls *leases) pick(calls int) int {
	start, found := rand.IntN(lanes), -1
	for i := range lanes {
		k := (start + i) % lanes
		if l := &ls.lane[k]; l.room(calls) {
			if l.busy == 0 {
				return k
			}
			if found < 0 {
				found = k
			}
		}
	}
	return found
}

func (ls *leases) hold(k, calls int, ttl time.Duration) ports.Reservation {
	l := &ls.lane[k]
	l.out++
	l.outCalls += calls
	ls.seq++
	id := "m" + strconv.FormatUint(ls.seq, 36)
	ls.held[id] = held{lane: k, calls: calls, deadline: time.Now().Add(ttl)}
	return ports.Reservation{ID: id, Calls: calls}
}

// forgetExpired drops the reservations held past their deadline, as a
// reservation row expires.
func (ls *leases) forgetExpired() {
	now := time.Now()
	for id, h := range ls.held {
		if now.After(h.deadline) {
			ls.drop(id, h)
		}
	}
}

func (ls *leases) drop(id string, h held) {
	delete(ls.held, id)
	ls.lane[h.lane].out--
	ls.lane[h.lane].outCalls -= h.calls
}

// idle is the lane to refill: one that no other refill is filling, with no
// admission in flight if there is one.
func (ls *leases) idle() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	start, found := rand.IntN(lanes), -1
	for i := range lanes {
		k := (start + i) % lanes
		if l := &ls.lane[k]; !l.refilling {
			if l.busy == 0 {
				found = k
				break
			}
			if found < 0 {
				found = k
			}
		}
	}
	if found < 0 {
		found = start
	}
	ls.lane[found].refilling = true
	return found
}

// refilled records that a refill moved (groups, calls) to lane k's row. The
// lane's belief only ever moves by what this process moved, so that an
// admission or refill whose reply comes late cannot make it higher than the
// row: only another replica's exact decision lowers the row behind it.
func (ls *leases) refilled(k, groups, calls int) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.lane[k].refilling = false
	ls.lane[k].free += groups
	ls.lane[k].freeCalls += calls
}

// refillFailed ends a refill of lane k that moved nothing.
func (ls *leases) refillFailed(k int) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.lane[k].refilling = false
}

// claim takes reservation id out of the held ones for its admission (false
// when it is not one of them).
func (ls *leases) claim(id string) (held, bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	h, ok := ls.held[id]
	if ok {
		delete(ls.held, id)
		ls.lane[h.lane].busy++
	}
	return h, ok
}

// unclaim puts back a claimed reservation whose admission changed nothing.
func (ls *leases) unclaim(id string, h held) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.lane[h.lane].busy--
	ls.held[id] = h
}

// settle records the end of a claimed reservation's admission that reached
// its row: admitted as a group of calls calls (the row gave one group and
// those calls; what the reservation held beyond them stays free on the
// lease), or refused by the row (its lease was taken back: the lane is empty
// until refilled).
func (ls *leases) settle(h held, admitted bool, calls int) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := &ls.lane[h.lane]
	l.busy--
	l.out--
	l.outCalls -= h.calls
	if admitted {
		l.free--
		l.freeCalls -= calls
	} else {
		l.free, l.freeCalls = 0, 0
	}
}

// release forgets reservation id; false when it is not one held here.
func (ls *leases) release(id string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	h, ok := ls.held[id]
	if ok {
		ls.drop(id, h)
	}
	return ok
}

// outstanding is what the held reservations take in total.
func (ls *leases) outstanding() (groups, calls int) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for k := range ls.lane {
		groups += ls.lane[k].out
		calls += ls.lane[k].outCalls
	}
	return groups, calls
}

// ids are the lane rows' ids.
func (ls *leases) ids() []string {
	ids := make([]string, lanes)
	for k := range ids {
		ids[k] = ls.id(k)
	}
	return ids
}

// keep is what each lane's row must keep for the held reservations, as the
// arguments of takeBack.
func (ls *leases) keep() (keepGroups, keepCalls []int64) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	keepGroups, keepCalls = make([]int64, lanes), make([]int64, lanes)
	for k := range ls.lane {
		keepGroups[k], keepCalls[k] = int64(ls.lane[k].out), int64(ls.lane[k].outCalls)
	}
	return keepGroups, keepCalls
}

// keptOnly records that takeBack left each lane's row with at most what its
// held reservations take (keep, as passed to it).
func (ls *leases) keptOnly(keepGroups, keepCalls []int64) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for k := range ls.lane {
		l := &ls.lane[k]
		l.free = min(l.free, int(keepGroups[k]))
		l.freeCalls = min(l.freeCalls, int(keepCalls[k]))
	}
}

// The refill statements: they move up to a lease of ($3 groups, $4 calls) to
// lane row $1 (expiring in $2 seconds), at least one group and $5 calls (the
// reservation that asked), and return what they moved. refillFromStripe takes
// them from stripe $6 (units completed groups gave back), locking that stripe
// only (lockStripe first, so that what it reads of the row is what it
// writes: one statement reading a row that others update could read an older
// version than the one it updates); refillFromRow takes them from the room
// the accounting row has left, under its lock (lockRow first), within the
// limits ($6 groups, $7 calls). The row counts a stripe's and a lease's units
// alike, so moving them between the two keeps it exact.
const (
	lockStripe  = `SELECT 1 FROM correlation_usage_stripes WHERE stripe = $1::smallint FOR UPDATE`
	upsertLease = `, up AS (
			INSERT INTO correlation_leases (id, free_groups, free_calls, expires_at)
			SELECT $1::text, m.groups, m.calls, now() + make_interval(secs => $2::float8) FROM m
			ON CONFLICT (id) DO UPDATE SET free_groups = correlation_leases.free_groups + EXCLUDED.free_groups,
				free_calls = correlation_leases.free_calls + EXCLUDED.free_calls, expires_at = EXCLUDED.expires_at
		)
		SELECT groups, calls FROM m`
	refillFromStripe = `WITH o AS (
			SELECT stripe, least(free_groups, $3::bigint) AS groups, least(free_calls, $4::bigint) AS calls
			FROM correlation_usage_stripes WHERE stripe = $6::smallint AND free_groups >= 1 AND free_calls >= $5::integer
		), m AS (
			UPDATE correlation_usage_stripes st SET free_groups = st.free_groups - o.groups, free_calls = st.free_calls - o.calls
			FROM o WHERE st.stripe = o.stripe
			RETURNING o.groups, o.calls
		)` + upsertLease
	refillFromRow = `WITH room AS (
			SELECT least($3::bigint, $6::bigint - u.live_groups - r.groups) AS groups,
			       least($4::bigint, $7::bigint - u.live_calls - r.calls) AS calls
			FROM correlation_usage u, ` + uncounted + ` r WHERE u.id
		), m AS (
			UPDATE correlation_usage u SET live_groups = u.live_groups + room.groups, live_calls = u.live_calls + room.calls
			FROM room WHERE u.id AND room.groups >= 1 AND room.calls >= $5::integer
			RETURNING room.groups, room.calls
		)` + upsertLease
)

// refill refills lane k with a lease of (leaseGroups, leaseCalls), from a
// random stripe when it has units, else from the accounting row; false when
// neither has room for one group of calls calls (the caller then decides
// exactly). Asynchronous commit, as sendReserve says.
func (s *Store) refill(ctx context.Context, k, calls, leaseGroups, leaseCalls int) (bool, error) {
	args := []any{s.leases.id(k), s.opt.reservationTTL.Seconds(), leaseGroups, leaseCalls, calls}
	for _, fromRow := range []bool{false, true} {
		b := &pgx.Batch{}
		b.Queue(`SELECT ` + asyncCommit)
		if fromRow {
			b.Queue(lockRow)
			b.Queue(refillFromRow, append(args, s.limits.MaxGroups, s.limits.MaxCalls)...)
		} else {
			st := rand.IntN(stripes)
			b.Queue(lockStripe, st)
			b.Queue(refillFromStripe, append(args, st)...)
		}
		var groups, moved int
		found, err := s.sendScan(ctx, b, &groups, &moved)
		if err != nil {
			s.leases.refillFailed(k) // a refill whose reply was lost leaves its units on the row, which is stricter
			return false, unavailable(err, "reserve: lease")
		}
		if found {
			s.leases.refilled(k, groups, moved)
			return true, nil
		}
	}
	s.leases.refillFailed(k)
	return false, nil
}

// sendScan sends b (one implicit transaction), scans the one row of its last
// statement into dest when it has one, and reports whether it had. A lost
// connection is retried once.
func (s *Store) sendScan(ctx context.Context, b *pgx.Batch, dest ...any) (bool, error) {
	ctx, cancel := s.opContext(ctx)
	defer cancel()
	send := func() (bool, error) {
		br := s.pool.SendBatch(ctx, b)
		var err error
		for range b.Len() - 1 {
			if _, err = br.Exec(); err != nil {
				break
			}
		}
		found := false
		if err == nil {
			err = br.QueryRow().Scan(dest...)
			found = err == nil
			if errors.Is(err, pgx.ErrNoRows) {
				err = nil
			}
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return found, err
	}
	found, err := send()
	if err != nil && pgconn.SafeToRetry(err) && ctx.Err() == nil {
		found, err = send()
	}
	return found, err
}

// giveLeasesBack returns this replica's lease rows to the accounting row
// (Close): a replica that stops cleanly does not leave its units for the next
// exact decision to take back. The row is locked first, in the order every
// writer takes its locks. Best effort: a failure leaves them to that decision.
func (s *Store) giveLeasesBack() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = s.sendReserve(ctx, "close: give the leases back", stmt{sql: lockRow}, stmt{sql: `WITH gone AS (
			DELETE FROM correlation_leases WHERE id = ANY($1::text[]) RETURNING free_groups, free_calls
		), d AS (SELECT coalesce(sum(free_groups), 0) AS groups, coalesce(sum(free_calls), 0) AS calls FROM gone)
		UPDATE correlation_usage u SET live_groups = u.live_groups - d.groups, live_calls = u.live_calls - d.calls
		FROM d WHERE u.id AND (d.groups > 0 OR d.calls > 0)`, args: []any{s.leases.ids()}})
}
