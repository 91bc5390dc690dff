package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports/porttest"
)

// Faults injected inside one operation's transaction: whatever the step that
// fails, the operation answers correlation_store_unavailable and the database
// is as before it.

// failOn installs, in the schema of u, a trigger that makes the given
// statement fail when cond holds for the row.
func failOn(t *testing.T, u, table, event, cond string) {
	t.Helper()
	name := "fail_" + randomHex(4)
	conn, err := pgxConnect(u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	sql := fmt.Sprintf(`CREATE FUNCTION %[1]s() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF %[4]s THEN RAISE EXCEPTION 'injected fault'; END IF; RETURN NEW; END $$;
		CREATE TRIGGER %[1]s BEFORE %[3]s ON %[2]s FOR EACH ROW EXECUTE FUNCTION %[1]s();`, name, table, event, cond)
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("install fault: %v", err)
	}
}

func snapshot(t *testing.T, u string) string {
	t.Helper()
	var s string
	query(t, u, `SELECT concat_ws(' | ',
		(SELECT string_agg(key || ':' || state || ':' || md5(record) || ':' || coalesce(md5(cached_response), '-'), ',' ORDER BY key) FROM correlation_groups),
		(SELECT string_agg(principal_id || '/' || public_id || '>' || group_key, ',' ORDER BY public_id) FROM correlation_calls),
		(SELECT string_agg(id || ':' || calls, ',' ORDER BY id) FROM correlation_reservations),
		(SELECT live_groups || '/' || live_calls || '/' || cache_bytes FROM correlation_usage),
		(SELECT string_agg(stripe || ':' || free_groups || '/' || free_calls, ',' ORDER BY stripe) FROM correlation_usage_stripes),
		(SELECT string_agg(id || ':' || free_groups || '/' || free_calls, ',' ORDER BY id) FROM correlation_leases))`, &s)
	return s
}

func TestAnAdmissionThatFailsMidwayWritesNothing(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	s := open(t, u, limits, porttest.Policy)
	admit(t, s, porttest.Group("g1", "p1", 2, porttest.T0))
	failOn(t, u, "correlation_calls", "INSERT", "NEW.public_id LIKE 'call_pmn_boom%'") // after the group row and the reservation
	r, err := s.Reserve(t.Context(), 2, porttest.T0)
	is.NoErr(err)
	before := snapshot(t, u)
	g := porttest.Group("boom", "p1", 2, porttest.T0)
	err = s.Admit(t.Context(), r, g)
	is.Equal(errs.CodeOf(err), errs.CorrelationStoreUnavailable) // the transaction failed: 503
	is.Equal(snapshot(t, u), before)                             // and nothing of it was written
	checkInvariants(t, u, limits)
}

func TestAnUpdateThatFailsMidwayWritesNothing(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	s := open(t, u, limits, porttest.Policy)
	g := porttest.Group("g1", "p1", 1, porttest.T0)
	admit(t, s, g)
	_, err := submit(s, g, "a", porttest.T0)
	is.NoErr(err)
	// Completing writes the cache budget on the accounting row, the group row,
	// then gives the capacity back to a stripe's lease: fail the last.
	failOn(t, u, "correlation_usage_stripes", "UPDATE", "NEW.free_groups > OLD.free_groups")
	before := snapshot(t, u)
	_, err = s.Update(t.Context(), "g1", func(gr *correlation.Group) (correlation.Decision, error) {
		return gr.Complete(porttest.T0, porttest.Policy, []byte("answer"), "d")
	})
	is.Equal(errs.CodeOf(err), errs.CorrelationStoreUnavailable)
	is.Equal(snapshot(t, u), before) // the group is still INFLIGHT, the cache empty
	is.Equal(stateOf(t, s, "g1"), correlation.Inflight)
	checkInvariants(t, u, limits)
}

func TestAConnectionKilledInsideAnUpdateWritesNothing(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	app := "pmgate_victim_" + randomHex(4)
	victim := withParam(t, u, "application_name", app)
	s := open(t, victim, limits, porttest.Policy)
	g := porttest.Group("g1", "p1", 1, porttest.T0)
	admit(t, s, g)
	before := snapshot(t, u)
	called := 0
	_, err := s.Update(t.Context(), "g1", func(gr *correlation.Group) (correlation.Decision, error) {
		called++
		admin(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app)
		return gr.Submit(porttest.T0, porttest.Policy, porttest.Submission(*gr, "r"), "a")
	})
	is.Equal(called, 1)                                          // the closure ran once, inside the transaction
	is.Equal(errs.CodeOf(err), errs.CorrelationStoreUnavailable) // whose connection died before the write
	is.Equal(snapshot(t, u), before)                             // so the claim was not made
	d, err := submit(s, g, "b", porttest.T0)                     // and the next attempt (a new connection) makes it
	is.NoErr(err)
	is.Equal(d.Effect, correlation.EffectDispatch)
	checkInvariants(t, u, limits)
}

func TestAStoreOutageAnswersUnavailableAndKeepsPendingGroups(t *testing.T) {
	needCtl(t)
	is := is.New(t)
	u := freshSchema(t)
	s := open(t, u, limits, porttest.Policy)
	g := porttest.Group("g1", "p1", 2, porttest.T0)
	admit(t, s, g)
	r, err := s.Reserve(t.Context(), 1, porttest.T0)
	is.NoErr(err)

	pgctl(t, "halt")
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			pgctl(t, "start")
		}
	})
	ctx := t.Context()
	unavailable := func(what string, err error) {
		t.Helper()
		if !errs.Has(err, errs.CorrelationStoreUnavailable) {
			t.Fatalf("%s during the outage: got %v vs expected correlation_store_unavailable", what, err)
		}
	}
	_, err = s.Reserve(ctx, 1, porttest.T0)
	unavailable("reserve", err)
	unavailable("admit", s.Admit(ctx, r, porttest.Group("g2", "p1", 1, porttest.T0)))
	unavailable("release", s.Release(ctx, r))
	_, err = s.Resolve(ctx, "p1", []string{"call_pmn_g1_0"})
	unavailable("resolve", err)
	called := false
	_, err = s.Update(ctx, "g1", func(*correlation.Group) (correlation.Decision, error) {
		called = true
		return correlation.Decision{}, nil
	})
	unavailable("update", err)
	is.True(!called) // the closure never ran without its transaction
	_, err = s.Sweep(ctx, porttest.T0)
	unavailable("sweep", err)
	_, err = s.Counts(ctx)
	unavailable("counts", err)
	unavailable("ping", s.Ping(ctx))

	pgctl(t, "start")
	restarted = true
	eventually(t, 30*time.Second, func() error { return s.Ping(context.Background()) })
	eventually(t, 30*time.Second, func() error { _, err := s.Counts(context.Background()); return err })
	is.Equal(stateOf(t, s, "g1"), correlation.Pending)                    // the pending group survived
	is.NoErr(s.Admit(ctx, r, porttest.Group("g2", "p1", 1, porttest.T0))) // and so did the reservation
	d, err := submit(s, g, "a", porttest.T0)
	is.NoErr(err)
	is.Equal(d.Effect, correlation.EffectDispatch) // claimed once
	checkInvariants(t, u, limits)
}
