package correlation_test

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/correlation"
)

func TestUsageChangeCountsLiveGroupsCallsAndCachedBytes(t *testing.T) {
	is := is.New(t)
	g := newFixture(t, "g1", "p1", "call_pmn_a", "call_pmn_b").group
	is.Equal(correlation.UsageChange(nil, &g), correlation.Usage{LiveGroups: 1, LiveCalls: 2}) // admitted
	done := g.Clone()
	done.State, done.CachedResponse = correlation.Consumed, []byte("12345")
	is.Equal(correlation.UsageChange(&g, &done), correlation.Usage{LiveGroups: -1, LiveCalls: -2, CacheBytes: 5}) // consumed, cached
	gone := done.Clone()
	gone.State = correlation.Removed
	is.Equal(correlation.UsageChange(&done, &gone), correlation.Usage{CacheBytes: -5}) // removed: holds nothing
	var total correlation.Usage
	for _, u := range []correlation.Usage{correlation.UsageChange(nil, &g), correlation.UsageChange(&g, &done), correlation.UsageChange(&done, &gone)} {
		total.Add(u)
	}
	is.Equal(total, correlation.Usage{}) // a group's whole life leaves the counters where they were
}

func TestFinishUpdateKeepsIdentityAndTheCacheBudget(t *testing.T) {
	is := is.New(t)
	cur := newFixture(t, "g1", "p1", "call_pmn_a").group
	never := func(int) (bool, error) {
		t.Fatal("the budget was asked without a new cached response")
		return false, nil
	}

	moved := cur.Clone()
	moved.PrincipalID = "p2"
	is.True(correlation.FinishUpdate(&cur, &moved, never) != nil) // a group never changes hands

	cached := cur.Clone()
	cached.CachedResponse = []byte("abc")
	var asked int
	is.NoErr(correlation.FinishUpdate(&cur, &cached, func(n int) (bool, error) { asked = n; return false, nil }))
	is.Equal(asked, 3)                    // the budget is asked for the response's bytes
	is.True(cached.CachedResponse == nil) // and a response over it is dropped

	cached.CachedResponse = []byte("abc")
	is.NoErr(correlation.FinishUpdate(&cur, &cached, func(int) (bool, error) { return true, nil }))
	is.Equal(string(cached.CachedResponse), "abc") // one that fits is kept

	again := cached.Clone()
	is.NoErr(correlation.FinishUpdate(&cached, &again, never)) // already cached: counted once

	boom := errors.New("budget unreadable")
	fresh := cur.Clone()
	fresh.CachedResponse = []byte("x")
	is.Equal(correlation.FinishUpdate(&cur, &fresh, func(int) (bool, error) { return false, boom }), boom)
}
