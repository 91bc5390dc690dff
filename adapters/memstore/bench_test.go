package memstore_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/ports/porttest"
)

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkMemoryPerLiveGroup reports the heap bytes one live two-call group
// costs in the memory store beyond the argument bytes it must keep.
func BenchmarkMemoryPerLiveGroup(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			for range b.N {
				before := heap()
				groups := make([]correlation.Group, n)
				argBytes := 0
				for i := range groups {
					groups[i] = porttest.TypicalGroup(i)
					for _, c := range groups[i].Calls {
						argBytes += len(c.ArgumentsJSON)
					}
				}
				s := memstore.New(correlation.Limits{MaxGroups: n, MaxCalls: 2 * n}, porttest.Policy)
				for _, g := range groups {
					r, err := s.Reserve(b.Context(), 2, porttest.T0)
					if err != nil {
						b.Fatal(err)
					}
					if err := s.Admit(b.Context(), r, g); err != nil {
						b.Fatal(err)
					}
				}
				groups = nil
				after := heap()
				total := float64(after - before)
				b.ReportMetric(total/float64(n), "B/group")
				b.ReportMetric((total-float64(argBytes))/float64(n), "B/group-beyond-args")
				b.ReportMetric(total/1024, "KiB-total")
				runtime.KeepAlive(s)
			}
		})
	}
}

// BenchmarkClaimUnderContention measures PENDING→INFLIGHT claims through the
// store's atomic update, every goroutine working on one shared store of 1,024
// groups (hashes precomputed outside the lock, as the app does). Each worker
// owns a stripe of groups and cycles it: claim (which must win) then release
// (INFLIGHT→PENDING), so claims/s is a lower bound that also pays for the
// release. The benchmark fails if a claim is rejected instead of measured.
func BenchmarkClaimUnderContention(b *testing.B) {
	const n = 1024
	s := memstore.New(correlation.Limits{MaxGroups: n, MaxCalls: 2 * n}, porttest.Policy)
	keys := make([]string, n)
	subs := make([]correlation.Submission, n)
	for i := range n {
		g := porttest.TypicalGroup(i)
		r, _ := s.Reserve(b.Context(), 2, porttest.T0)
		if err := s.Admit(b.Context(), r, g); err != nil {
			b.Fatal(err)
		}
		keys[i] = g.Key
		subs[i] = porttest.Submission(g, "result")
		subs[i].Echo, _ = canon.PrepareEcho(subs[i].Continuation.Prefix, nil)
		subs[i].ResultsHash = correlation.ResultsHash(subs[i].Continuation)
	}
	var workers, claims, rejected atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := int(workers.Add(1) - 1)
		stripe := n / 64
		for j := 0; pb.Next(); j++ {
			i := (w%64)*stripe + j%stripe
			_, err := s.Update(b.Context(), keys[i], func(g *correlation.Group) (correlation.Decision, error) {
				d, err := g.Submit(porttest.T0, porttest.Policy, subs[i], "attempt")
				if err == nil && d.Effect != correlation.EffectDispatch {
					rejected.Add(1)
				}
				return correlation.Decision{}, err
			})
			if err == nil {
				_, err = s.Update(b.Context(), keys[i], func(g *correlation.Group) (correlation.Decision, error) {
					return g.NotSent(porttest.T0, porttest.Policy)
				})
			}
			if err != nil {
				rejected.Add(1)
			}
			claims.Add(1)
		}
	})
	b.StopTimer()
	if rejected.Load() != 0 {
		b.Fatalf("%d of %d claims were rejected instead of measured", rejected.Load(), claims.Load())
	}
	b.ReportMetric(float64(claims.Load())/b.Elapsed().Seconds(), "claims/s")
}
