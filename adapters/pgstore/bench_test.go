package pgstore_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pmgate/pmgate/adapters/pgstore"
	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports/porttest"
)

// latencies collects per-operation durations from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(ds []time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, ds...)
	l.mu.Unlock()
}

func (l *latencies) quantile(q float64) time.Duration {
	if len(l.d) == 0 {
		return 0
	}
	slices.Sort(l.d)
	return l.d[min(len(l.d)-1, int(q*float64(len(l.d))))]
}

// BenchmarkClaim measures PENDING→INFLIGHT claims (the continuation's atomic
// update: lock, decode, Submit, write, commit) against the local PostgreSQL,
// with one replica and with two replicas (two stores, separate pools) taking
// turns, with 1 and 8 claimers per CPU. Every claim is on a distinct group;
// each wins.
func BenchmarkClaim(b *testing.B) {
	baseURL(b)
	for _, c := range []struct{ replicas, perCPU int }{{1, 1}, {1, 8}, {2, 1}, {2, 8}} {
		replicas := c.replicas
		b.Run(fmt.Sprintf("replicas=%d/claimers=%d", replicas, c.perCPU*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			u := freshSchema(b)
			l := correlation.Limits{MaxGroups: 1 << 22, MaxCalls: 1 << 23, ResponseCacheBytes: 1 << 20}
			stores := make([]*pgstore.Store, replicas)
			for i := range stores {
				stores[i] = open(b, u, l, porttest.Policy)
			}
			groups := make([]correlation.Group, b.N)
			subs := make([]correlation.Submission, b.N)
			for i := range groups {
				groups[i] = porttest.TypicalGroup(i)
				subs[i] = porttest.Submission(groups[i], "result")
				subs[i].Echo, _ = canon.PrepareEcho(subs[i].Continuation.Prefix, nil)
			}
			for chunk := range slices.Chunk(groups, 10000) {
				if err := stores[0].LoadPending(b.Context(), chunk); err != nil {
					b.Fatal(err)
				}
			}
			var next, dispatched atomic.Int64
			var lat latencies
			b.SetParallelism(c.perCPU)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					i := int(next.Add(1) - 1)
					s := stores[i%replicas]
					start := time.Now()
					_, err := s.Update(context.Background(), groups[i].Key, func(g *correlation.Group) (correlation.Decision, error) {
						d, err := g.Submit(porttest.T0, porttest.Policy, subs[i], "attempt")
						if err == nil && d.Effect == correlation.EffectDispatch {
							dispatched.Add(1)
						}
						return correlation.Decision{}, err
					})
					mine = append(mine, time.Since(start))
					if err != nil {
						b.Error(err)
						return
					}
				}
				lat.add(mine)
			})
			b.StopTimer()
			if dispatched.Load() != int64(b.N) {
				b.Fatalf("dispatched %d of %d claims", dispatched.Load(), b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
			b.ReportMetric(float64(lat.quantile(0.50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat.quantile(0.99).Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkAdmit measures the store's cost of one tool turn's admission:
// Reserve (in the replica's memory, against a lease row of its own; a refill
// statement once per 64 turns of a lane) then Admit (one statement: the unit
// taken off the lease row, the group row, two call index rows; durable
// commit) — one transaction, one round trip. serial is the latency one turn
// adds; parallel is the throughput of 16 claimers at once (whatever GOMAXPROCS
// is), whose admissions each write a lease row of their own lane and no
// shared row; parallel+ledger adds the usage ledger's admission of each turn,
// all of one key (the worst case: one key's budget row is exact, so serial);
// parallel+turn is a full tool turn of the store: the admission, then the
// continuation's claim (PENDING→INFLIGHT) and its completion (CONSUMED), four
// transactions.
func BenchmarkAdmit(b *testing.B) {
	const claimers = 16 // the target's load: docs/BENCHMARKS.md
	baseURL(b)
	for _, mode := range []string{"serial", "parallel", "parallel+ledger", "parallel+turn"} {
		b.Run(mode, func(b *testing.B) {
			u := freshSchema(b)
			l := correlation.Limits{MaxGroups: 1 << 22, MaxCalls: 1 << 23, ResponseCacheBytes: 1 << 20}
			s := open(b, u, l, porttest.Policy)
			ledger := s.Usage()
			groups := make([]correlation.Group, b.N)
			for i := range groups {
				groups[i] = porttest.TypicalGroup(i)
			}
			var next atomic.Int64
			var lat latencies
			turn := func() time.Duration {
				i := int(next.Add(1) - 1)
				start := time.Now()
				var err error
				if mode == "parallel+ledger" { // every turn of one key, as the gateway counts it first
					err = porttest.AdmitOnce(context.Background(), ledger, "k1", usage.Limits{DispatchesPerDay: 1 << 30}, porttest.T0)
				}
				if err != nil {
					b.Error(err)
					return time.Since(start)
				}
				r, err := s.Reserve(context.Background(), 2, porttest.T0)
				if err == nil {
					err = s.Admit(context.Background(), r, groups[i])
				}
				if err == nil && mode == "parallel+turn" {
					err = continueTurn(s, groups[i])
				}
				if err != nil {
					b.Error(err)
				}
				return time.Since(start)
			}
			b.ResetTimer()
			if mode == "serial" {
				ds := make([]time.Duration, 0, b.N)
				for range b.N {
					ds = append(ds, turn())
				}
				lat.add(ds)
			} else {
				b.SetParallelism(max(1, claimers/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					var mine []time.Duration
					for pb.Next() {
						mine = append(mine, turn())
					}
					lat.add(mine)
				})
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
			b.ReportMetric(float64(lat.quantile(0.99).Microseconds())/1000, "p99-ms")
			checkInvariants(b, u, l)
		})
	}
}

// continueTurn claims g as its continuation does and completes it.
func continueTurn(s *pgstore.Store, g correlation.Group) error {
	sub := porttest.Submission(g, "result")
	sub.Echo, _ = canon.PrepareEcho(sub.Continuation.Prefix, nil)
	_, err := s.Update(context.Background(), g.Key, func(gr *correlation.Group) (correlation.Decision, error) {
		d, err := gr.Submit(porttest.T0, porttest.Policy, sub, "attempt")
		if err == nil && d.Effect != correlation.EffectDispatch {
			err = fmt.Errorf("claim of %s: effect %v, want a dispatch", g.Key, d.Effect)
		}
		return d, err
	})
	if err != nil {
		return err
	}
	_, err = s.Update(context.Background(), g.Key, func(gr *correlation.Group) (correlation.Decision, error) {
		return gr.Complete(porttest.T0, porttest.Policy, nil, "digest")
	})
	return err
}

// BenchmarkUsageAdmit is the ledger's cost on the path of every request that
// may dispatch: one budget transaction (lock, decide, write).
func BenchmarkUsageAdmit(b *testing.B) {
	porttest.BenchUsageAdmit(b, open(b, freshSchema(b), limits, porttest.Policy).Usage())
}
