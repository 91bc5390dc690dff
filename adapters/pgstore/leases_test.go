package pgstore_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

// A reservation made in memory is admitted from its lease row only when the
// row still holds the group's calls: a lease whose calls were taken back (its
// groups left) must not admit it, whatever the replica believes; the
// admission is then decided exactly.
func TestALeasedAdmissionChecksTheLeasesCalls(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 640, MaxCalls: 1280} // leases of 10 groups, 20 calls
	s := open(t, u, l, porttest.Policy)
	r, err := s.Reserve(t.Context(), 2, porttest.T0)
	is.NoErr(err)
	var leases, groups, calls int
	query(t, u, `SELECT count(*), sum(free_groups), sum(free_calls) FROM correlation_leases`, &leases, &groups, &calls)
	is.Equal([]int{leases, groups, calls}, []int{1, 10, 20}) // the reservation is held in memory, on this lease
	// The lease's calls but one go back to the accounting row; its groups stay.
	execOn(t, u, `UPDATE correlation_usage SET live_calls = live_calls - 19 WHERE id`)
	execOn(t, u, `UPDATE correlation_leases SET free_calls = 1`)
	checkInvariants(t, u, l)
	is.NoErr(s.Admit(t.Context(), r, porttest.Group("g1", "p1", 2, porttest.T0))) // decided exactly: there is room
	c, err := s.Counts(t.Context())
	is.NoErr(err)
	is.Equal(c.LiveGroups, 1)
	is.Equal(c.LiveCalls, 2)
	checkInvariants(t, u, l) // no lease row below zero, every unit counted once
}

// A reservation of a version 3 binary (during a rolling upgrade) was never
// counted on the accounting row: releasing it gives nothing to a stripe.
func TestReleasingAVersion3ReservationCreditsNoStripe(t *testing.T) {
	is := is.New(t)
	u := freshSchema(t)
	l := correlation.Limits{MaxGroups: 4, MaxCalls: 8} // no leases: every decision exact
	s := open(t, u, l, porttest.Policy)
	execOn(t, u, `INSERT INTO correlation_reservations (id, calls, expires_at) VALUES ('v3', 2, now() + interval '1 minute')`) // as version 3 does
	is.NoErr(s.Release(t.Context(), ports.Reservation{ID: "v3", Calls: 2}))
	var reservations, groups, calls int
	query(t, u, `SELECT (SELECT count(*) FROM correlation_reservations), sum(free_groups), sum(free_calls) FROM correlation_usage_stripes`,
		&reservations, &groups, &calls)
	is.Equal([]int{reservations, groups, calls}, []int{0, 0, 0})
	checkInvariants(t, u, l)
	for _, k := range []string{"g1", "g2", "g3", "g4"} {
		admit(t, s, porttest.Group(k, "p1", 2, porttest.T0))
	}
	_, err := s.Reserve(t.Context(), 1, porttest.T0)
	is.True(err != nil) // full at the cap, not one over
	checkInvariants(t, u, l)
}
