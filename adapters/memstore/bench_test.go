package memstore_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"pmgate/adapters/memstore"
	"pmgate/domain/canon"
	"pmgate/domain/correlation"
	"pmgate/ports/porttest"
)

// typicalGroup is a two-call group with ~100-byte argument strings and
// realistic id and hash sizes.
func typicalGroup(i int) correlation.Group {
	g := porttest.Group(fmt.Sprintf("key-%022d", i), "principal-hmac-0123456789012345678901234567", 2, porttest.T0)
	for j := range g.Calls {
		g.Calls[j].PublicID = fmt.Sprintf("call_pmn_%032d", i*2+j)
		g.Calls[j].UpstreamID = fmt.Sprintf("tc-%024x", i*2+j)
		g.Calls[j].UpstreamGroupID = fmt.Sprintf("grp-%024x", i)
		g.Calls[j].OriginalName = "get_weather"
		g.Calls[j].ArgumentsJSON = `{"city":"` + strings.Repeat("x", 88) + `"}`
		g.Calls[j].ArgumentsHash = "sha256:" + strings.Repeat("a", 64)
		g.Calls[j].SchemaHash = "sha256:" + strings.Repeat("b", 64)
	}
	g.ConversationID = fmt.Sprintf("conv-%032x", i)
	g.ToolsHash = "sha256:" + strings.Repeat("c", 64)
	return g
}

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
					groups[i] = typicalGroup(i)
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
// store's atomic update, with every goroutine claiming groups from one shared
// store (transcript hashes precomputed outside the lock, as the app does).
func BenchmarkClaimUnderContention(b *testing.B) {
	const n = 1 << 16
	s := memstore.New(correlation.Limits{MaxGroups: n, MaxCalls: 2 * n}, porttest.Policy)
	subs := make([]correlation.Submission, n)
	for i := range n {
		g := typicalGroup(i)
		r, _ := s.Reserve(b.Context(), 2, porttest.T0)
		if err := s.Admit(b.Context(), r, g); err != nil {
			b.Fatal(err)
		}
		subs[i] = porttest.Submission(g, "result")
		subs[i].PrefixHash, _ = canon.TranscriptHash(subs[i].Continuation.Prefix)
	}
	var next atomic.Int64
	var dispatched atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1)-1) % n
			key := fmt.Sprintf("key-%022d", i)
			_ = s.Update(b.Context(), key, func(g *correlation.Group) error {
				d, err := g.Submit(porttest.T0, porttest.Policy, subs[i], "attempt")
				if err == nil && d.Effect == correlation.EffectDispatch {
					dispatched.Add(1)
				}
				return err
			})
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
}
