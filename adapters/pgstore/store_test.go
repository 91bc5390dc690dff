package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/pgstore"
	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

func TestPostgresStorePassesTheStoreContract(t *testing.T) {
	baseURL(t)
	porttest.StoreContract(t, func(t *testing.T, l correlation.Limits, p correlation.Policy) ports.CorrelationStore {
		u := freshSchema(t)
		s := open(t, u, l, p)
		t.Cleanup(func() { checkInvariants(t, u, l) })
		return s
	})
}

// The generated runs share one schema, emptied before each run, and each run's
// store is closed at its end, so that its connections are given back before
// the next run opens more.
func TestPostgresStoreBehavesAsTheRegistryUnderRacingClaims(t *testing.T) {
	porttest.StoreMachine(t, modelStores(t))
}

// The same with leases of two groups whatever the limits: reservations are
// made in memory, refilled and taken back near the cap, and must still answer
// and count as the registry does.
func TestPostgresStoreWithLeasesBehavesAsTheRegistry(t *testing.T) {
	porttest.StoreMachine(t, modelStores(t, pgstore.WithLeaseGroups(2)))
}

// modelStores opens the stores of the generated runs, on one schema emptied
// before each run.
func modelStores(t *testing.T, opts ...pgstore.Option) porttest.OpenStore {
	baseURL(t)
	u := freshSchema(t)
	return func(l correlation.Limits, p correlation.Policy) (ports.CorrelationStore, func()) {
		s, err := pgstore.Open(context.Background(), u, l, p, quiet(), opts...)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		execOn(t, u, `TRUNCATE correlation_groups, correlation_calls, correlation_reservations, correlation_leases;
			UPDATE correlation_usage SET live_groups = 0, live_calls = 0, cache_bytes = 0;
			UPDATE correlation_usage_stripes SET free_groups = 0, free_calls = 0`)
		return s, func() {
			s.Close()
			checkInvariants(t, u, l)
		}
	}
}

var limits = correlation.Limits{MaxGroups: 100, MaxCalls: 400, ResponseCacheBytes: 1 << 20}

func admit(t testing.TB, s ports.CorrelationStore, g correlation.Group) {
	t.Helper()
	porttest.Admit(t, s, g, g.IssuedAt)
}

func stateOf(t testing.TB, s ports.CorrelationStore, key string) correlation.State {
	t.Helper()
	return porttest.StateOf(t, s, key)
}

// submit runs one continuation submission of g against store s.
func submit(s ports.CorrelationStore, g correlation.Group, attempt string, now time.Time) (correlation.Decision, error) {
	d, err := s.Update(context.Background(), g.Key, func(gr *correlation.Group) (correlation.Decision, error) {
		return gr.Submit(now, porttest.Policy, porttest.Submission(g, "result"), attempt)
	})
	return d, err
}

func TestOpenRefusesAnUnreachableDatabase(t *testing.T) {
	is := is.New(t)
	start := time.Now()
	_, err := pgstore.Open(t.Context(), "postgres://pmgate@127.0.0.1:1/none?sslmode=disable", limits, porttest.Policy, quiet(),
		pgstore.WithConnectTimeout(2*time.Second))
	is.Equal(errs.CodeOf(err), errs.CorrelationStoreUnavailable) // unreachable at start: the store is unavailable
	is.True(time.Since(start) < 10*time.Second)                  // and it says so promptly
	is.True(!strings.Contains(errs.Public(err).Message, "127.0.0.1"))
}

func TestOpenRefusesAMalformedURL(t *testing.T) {
	is := is.New(t)
	_, err := pgstore.Open(t.Context(), "postgres://user:SECRET-pw@127.0.0.1:notaport/db", limits, porttest.Policy, quiet())
	is.Equal(errs.CodeOf(err), errs.ConfigInvalid)       // a URL that does not parse is a configuration error
	is.True(!strings.Contains(err.Error(), "SECRET-pw")) // whose message never quotes it
}

func TestConcurrentOpensOnAFreshDatabaseMigrateOnce(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	const n = 8
	var wg sync.WaitGroup
	errc := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := pgstore.Open(context.Background(), u, limits, porttest.Policy, quiet())
			if err == nil {
				if s.SchemaVersion() != pgstore.LatestVersion() {
					err = fmt.Errorf("schema version %d", s.SchemaVersion())
				}
				s.Close()
			}
			errc <- err
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		is.NoErr(err) // every replica starts
	}
	var rows, usage int
	query(t, u, `SELECT count(*) FROM `+pgstore.MigrationsTable, &rows)
	is.Equal(rows, pgstore.LatestVersion()) // each migration applied once
	query(t, u, `SELECT count(*) FROM correlation_usage`, &usage)
	is.Equal(usage, 1) // one accounting row
}

func TestADatabaseWithANewerSchemaIsRefused(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	s := open(t, u, limits, porttest.Policy)
	s.Close()
	s2, err := pgstore.Open(t.Context(), u, limits, porttest.Policy, quiet()) // reopening is fine
	is.NoErr(err)
	s2.Close()
	next := pgstore.LatestVersion() + 1
	conn := u
	func() {
		ctx := context.Background()
		c, err := pgxConnect(conn)
		is.NoErr(err)
		defer c.Close(ctx)
		_, err = c.Exec(ctx, `INSERT INTO `+pgstore.MigrationsTable+` (version, name) VALUES ($1, 'from_the_future')`, next)
		is.NoErr(err)
	}()
	_, err = pgstore.Open(t.Context(), u, limits, porttest.Policy, quiet())
	is.Equal(errs.CodeOf(err), errs.ConfigInvalid)                                 // refused
	is.True(strings.Contains(err.Error(), fmt.Sprintf("version %d, newer", next))) // with a clear reason
}

func TestAMissingSchemaIsAConfigurationError(t *testing.T) {
	is := is.New(t)
	u := withSearchPath(t, baseURL(t), "pmgate_no_such_schema_"+randomHex(4))
	_, err := pgstore.Open(t.Context(), u, limits, porttest.Policy, quiet())
	is.Equal(errs.CodeOf(err), errs.ConfigInvalid)
}

func TestClaimsOnTwoReplicasDispatchExactlyOnce(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	a, b := open(t, u, limits, porttest.Policy), open(t, u, limits, porttest.Policy)
	for round := range 5 {
		g := porttest.Group(fmt.Sprintf("g%d", round), "p1", 2, porttest.T0)
		admit(t, a, g)
		var wins, inflight, other atomic.Int32
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := []*pgstore.Store{a, b}[i%2]
				d, err := submit(s, g, fmt.Sprintf("a%d", i), porttest.T0)
				switch {
				case err == nil && d.Effect == correlation.EffectDispatch:
					wins.Add(1)
				case err == nil && d.Code == errs.ContinuationInflight:
					inflight.Add(1)
				default:
					other.Add(1)
				}
			}()
		}
		wg.Wait()
		is.Equal(wins.Load(), int32(1))      // one claim wins across both replicas
		is.Equal(inflight.Load(), int32(31)) // every other one sees INFLIGHT
		is.Equal(other.Load(), int32(0))
	}
	checkInvariants(t, u, limits)
}

func TestCapacityIsExactAcrossReplicas(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 10, MaxCalls: 100, ResponseCacheBytes: 0}
	a, b := open(t, u, l, porttest.Policy), open(t, u, l, porttest.Policy)
	var ok, full atomic.Int32
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := []*pgstore.Store{a, b}[i%2]
			r, err := s.Reserve(context.Background(), 1, porttest.T0)
			switch {
			case err == nil:
				ok.Add(1)
				g := porttest.Group(fmt.Sprintf("g%02d", i), "p1", 1, porttest.T0)
				if err := s.Admit(context.Background(), r, g); err != nil {
					t.Errorf("admit: %v", err)
				}
			case errs.Has(err, errs.CorrelationCapacityExceeded):
				full.Add(1)
			default:
				t.Errorf("reserve: %v", err)
			}
		}()
	}
	wg.Wait()
	is.Equal(ok.Load(), int32(10))   // exactly MaxGroups admitted
	is.Equal(full.Load(), int32(30)) // the rest refused
	c, err := a.Counts(t.Context())
	is.NoErr(err)
	is.Equal(c.LiveGroups, 10)
	is.Equal(c.ByState[correlation.Pending], 10)
	checkInvariants(t, u, l)
}

func TestAnExpiredReservationFreesItsCapacity(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 1, MaxCalls: 8}
	dead := open(t, u, l, porttest.Policy, pgstore.WithReservationTTL(300*time.Millisecond))
	live := open(t, u, l, porttest.Policy)
	r, err := dead.Reserve(t.Context(), 2, porttest.T0) // a replica reserves, then dies
	is.NoErr(err)
	dead.Close()
	_, err = live.Reserve(t.Context(), 1, porttest.T0)
	is.True(errs.Has(err, errs.CorrelationCapacityExceeded)) // held while it may still be admitted
	time.Sleep(400 * time.Millisecond)
	r2, err := live.Reserve(t.Context(), 1, porttest.T0)
	is.NoErr(err)                                                                                                               // freed at its expiry
	is.True(errs.Has(live.Admit(t.Context(), r, porttest.Group("g1", "p1", 1, porttest.T0)), errs.CorrelationCapacityExceeded)) // the dead one is gone
	is.NoErr(live.Admit(t.Context(), r2, porttest.Group("g2", "p1", 1, porttest.T0)))
	checkInvariants(t, u, l)
}

func TestADuplicatePublicIDKeepsTheReservation(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	s := open(t, u, limits, porttest.Policy)
	admit(t, s, porttest.Group("g1", "p1", 1, porttest.T0))
	r, err := s.Reserve(t.Context(), 1, porttest.T0)
	is.NoErr(err)
	clash := porttest.Group("g2", "p1", 1, porttest.T0)
	clash.Calls[0].PublicID = "call_pmn_g1_0"
	err = s.Admit(t.Context(), r, clash)
	is.True(errors.Is(err, correlation.ErrDuplicatePublicID)) // the caller redraws
	is.True(!errs.Has(err, errs.CorrelationStoreUnavailable))
	other := porttest.Group("g2", "p2", 1, porttest.T0) // the same id for another principal is fine
	other.Calls[0].PublicID = "call_pmn_g1_0"
	is.NoErr(s.Admit(t.Context(), r, other)) // with the same reservation
	got, err := s.Resolve(t.Context(), "p2", []string{"call_pmn_g1_0"})
	is.NoErr(err)
	is.Equal(got["call_pmn_g1_0"], "g2")
	checkInvariants(t, u, limits)
}

func TestConcurrentSweepsApplyEachEventOnce(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 2000, MaxCalls: 2000}
	a, b := open(t, u, l, porttest.Policy), open(t, u, l, porttest.Policy)
	const n = 700 // several batches
	var groups []correlation.Group
	for i := range n {
		groups = append(groups, porttest.Group(fmt.Sprintf("g%04d", i), "p1", 1, porttest.T0))
	}
	is.NoErr(a.LoadPending(t.Context(), groups))
	for i := range 100 { // some claimed: they become UNCERTAIN, not EXPIRED
		_, err := submit(a, groups[i*7], "a", porttest.T0)
		is.NoErr(err)
	}
	sweep := func(at time.Time) correlation.SweepReport {
		var total correlation.SweepReport
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rep, err := []*pgstore.Store{a, b}[i%2].Sweep(context.Background(), at)
				if err != nil {
					t.Errorf("sweep: %v", err)
				}
				mu.Lock()
				total.Expired += rep.Expired
				total.Uncertain += rep.Uncertain
				total.Removed += rep.Removed
				mu.Unlock()
			}()
		}
		wg.Wait()
		return total
	}
	at := porttest.T0.Add(porttest.Policy.PendingTTL)
	rep := sweep(at)
	is.Equal(rep, correlation.SweepReport{Expired: n - 100, Uncertain: 100}) // every event applied once in total
	checkInvariants(t, u, l)
	rep = sweep(at.Add(porttest.Policy.TerminalTTL))
	is.Equal(rep, correlation.SweepReport{Removed: n}) // and every tombstone removed once
	c, err := b.Counts(t.Context())
	is.NoErr(err)
	is.Equal(len(c.ByState), 0)
	checkInvariants(t, u, l)
}

func TestCachedResponsesStayWithinTheBudgetUnderConcurrency(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 100, MaxCalls: 100, ResponseCacheBytes: 100}
	a, b := open(t, u, l, porttest.Policy), open(t, u, l, porttest.Policy)
	const n = 20
	for i := range n {
		g := porttest.Group(fmt.Sprintf("g%02d", i), "p1", 1, porttest.T0)
		admit(t, a, g)
		_, err := submit(a, g, "a", porttest.T0)
		is.NoErr(err)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := []*pgstore.Store{a, b}[i%2].Update(context.Background(), fmt.Sprintf("g%02d", i), func(g *correlation.Group) (correlation.Decision, error) {
				return g.Complete(porttest.T0, porttest.Policy, []byte("12345678"), "d")
			})
			if err != nil {
				t.Errorf("complete: %v", err)
			}
		}()
	}
	wg.Wait()
	c, err := a.Counts(t.Context())
	is.NoErr(err)
	is.Equal(c.CacheBytes, 96) // twelve 8-byte responses fit in 100 bytes; the others are not retained
	is.Equal(c.ByState[correlation.Consumed], n)
	is.Equal(c.LiveGroups, 0)
	checkInvariants(t, u, l)
}

func TestRecordsSurviveTheDatabaseExactly(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	s := open(t, u, limits, porttest.Policy)
	g := porttest.Group("g1", "p1", 2, porttest.T0.In(time.FixedZone("x", 3600)).Add(123456789*time.Nanosecond))
	g.Calls[1].ArgumentsJSON = "{\"a\":\"\xff\xfe invalid utf-8 and \x00 nul\"}"
	admit(t, s, g)
	var got correlation.Group
	errRead := fmt.Errorf("read")
	_, err := s.Update(t.Context(), "g1", func(gr *correlation.Group) (correlation.Decision, error) {
		got = gr.Clone()
		return correlation.Decision{}, errRead
	})
	is.Equal(err, errRead)
	is.Equal(got.Calls, g.Calls)            // argument strings byte-exact
	is.True(got.IssuedAt.Equal(g.IssuedAt)) // nanoseconds kept
	is.True(got.PendingExpiresAt.Equal(g.PendingExpiresAt))
	is.Equal(got.CachedResponse, []byte(nil))
	// an empty but retained response stays distinct from none
	g2 := porttest.Group("g2", "p1", 1, porttest.T0)
	admit(t, s, g2)
	d, err := submit(s, g2, "a", porttest.T0)
	is.NoErr(err)
	is.Equal(d.Effect, correlation.EffectDispatch)
	_, err = s.Update(t.Context(), "g2", func(gr *correlation.Group) (correlation.Decision, error) {
		return gr.Complete(porttest.T0, porttest.Policy, []byte{}, "d")
	})
	is.NoErr(err)
	_, err = s.Update(t.Context(), "g2", func(gr *correlation.Group) (correlation.Decision, error) {
		got = gr.Clone()
		return correlation.Decision{}, nil
	})
	is.NoErr(err)
	is.True(got.CachedResponse != nil && len(got.CachedResponse) == 0)
}

func TestAnInflightGroupOfADeadReplicaBecomesUncertainAtItsDeadline(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	a, b := open(t, u, limits, porttest.Policy), open(t, u, limits, porttest.Policy)
	g := porttest.Group("g1", "p1", 1, porttest.T0)
	admit(t, a, g)
	d, err := submit(a, g, "a", porttest.T0)
	is.NoErr(err)
	is.Equal(d.Effect, correlation.EffectDispatch) // A claims
	a.Close()                                      // and dies before settling
	d, err = submit(b, g, "b", porttest.T0.Add(time.Second))
	is.NoErr(err)
	is.Equal(d.Code, errs.ContinuationInflight) // before the deadline B refuses
	rep, err := b.Sweep(t.Context(), porttest.T0.Add(porttest.Policy.InflightTTL))
	is.NoErr(err)
	is.Equal(rep.Uncertain, 1) // at the deadline B's sweep makes it UNCERTAIN
	d, err = submit(b, g, "b", porttest.T0.Add(porttest.Policy.InflightTTL+time.Second))
	is.NoErr(err)
	is.Equal(d.Code, errs.ContinuationOutcomeUncertain) // and it is never dispatched again
	is.True(d.Effect != correlation.EffectDispatch)
}

func TestShutdownCancelsNothing(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	a, b := open(t, u, limits, porttest.Policy), open(t, u, limits, porttest.Policy)
	admit(t, a, porttest.Group("g1", "p1", 1, porttest.T0))
	is.True(a.Shared()) // so the app of a stopping replica cancels nothing
	n, c := gateway(a, porttest.NewClock(porttest.T0)).Shutdown(t.Context())
	a.Close()
	is.Equal(n, 0)                              // nothing cancelled
	is.Equal(c.ByState[correlation.Pending], 1) // the counts seen last
	is.Equal(stateOf(t, b, "g1"), correlation.Pending)
	is.True(errs.Has(a.Ping(t.Context()), errs.CorrelationStoreUnavailable)) // the replica's store is closed
	is.NoErr(b.Ping(t.Context()))
}

func TestRunSweepsUntilCancelled(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	s := open(t, u, limits, porttest.Policy)
	admit(t, s, porttest.Group("g1", "p1", 1, porttest.T0))
	clock := porttest.NewClock(porttest.T0.Add(porttest.Policy.PendingTTL))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		gateway(s, clock).RunSweeps(ctx, 10*time.Millisecond)
		close(done)
	}()
	eventually(t, 10*time.Second, func() error {
		if st := stateOf(t, s, "g1"); st != correlation.Expired {
			return fmt.Errorf("state %s", st)
		}
		return nil
	})
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop")
	}
	is.Equal(stateOf(t, s, "g1"), correlation.Expired) // the sweeper expired the overdue group
}

// gateway is the app on s, as a replica's process wires it.
func gateway(s ports.CorrelationStore, clock ports.Clock) *app.Gateway {
	return app.New(app.Config{Correlation: true, Policy: porttest.Policy}, &porttest.Upstream{}, s, clock, &porttest.IDs{}, quiet())
}

func TestOnlyReservationsCommitAsynchronously(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	durable := withParam(t, u, "synchronous_commit", "on")                  // whatever the test server's default
	s := open(t, durable, limits, porttest.Policy, pgstore.WithMaxConns(1)) // one connection: the reservation's
	admit(t, s, porttest.Group("g1", "p1", 1, porttest.T0))
	after, err := s.Setting(t.Context(), "synchronous_commit")
	is.NoErr(err)
	is.Equal(after, "on") // the reservation's setting did not outlive its transaction: claims stay durable
}
