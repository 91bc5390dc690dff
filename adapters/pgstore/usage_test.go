package pgstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

func TestPostgresUsageLedgerPassesTheUsageContract(t *testing.T) {
	baseURL(t)
	porttest.UsageContract(t, func(t *testing.T) ports.UsageLedger {
		return open(t, freshSchema(t), limits, porttest.Policy).Usage()
	})
}

// TestADailyQuotaHoldsAcrossReplicas races N replicas (stores with pools of
// their own on one database) × M concurrent admissions of one slot against a
// daily quota: exactly the quota is admitted, none more (the over-admission
// bound is zero, docs/USAGE.md).
func TestADailyQuotaHoldsAcrossReplicas(t *testing.T) {
	u := freshSchema(t)
	const replicas, perReplica, quota = 4, 25, 37
	ledgers := make([]ports.UsageLedger, replicas)
	for i := range ledgers {
		ledgers[i] = open(t, u, limits, porttest.Policy).Usage()
	}
	for round := range 3 {
		slot := []string{"agent-a", "agent-b", "agent-c"}[round]
		is := is.New(t)
		var admitted, refused atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, l := range ledgers {
			for range perReplica {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					err := porttest.AdmitOnce(context.Background(), l, slot, usage.Limits{DispatchesPerDay: quota}, porttest.T0)
					switch {
					case err == nil:
						admitted.Add(1)
					case errs.Has(err, errs.KeyQuotaExhausted):
						refused.Add(1)
					default:
						t.Errorf("admission: %v", err)
					}
				}()
			}
		}
		close(start)
		wg.Wait()
		t.Logf("round %d: %d replicas × %d concurrent admissions, quota %d: %d admitted (over-admission %d), %d refused",
			round, replicas, perReplica, quota, admitted.Load(), admitted.Load()-quota, refused.Load())
		is.Equal(admitted.Load(), int64(quota))
		is.Equal(refused.Load(), int64(replicas*perReplica-quota))
		var n int64
		query(t, u, `SELECT day_dispatches FROM usage_budgets WHERE slot = '`+slot+`'`, &n)
		is.Equal(n, int64(quota))
	}
}
