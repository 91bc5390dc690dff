package memstore

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/pmgate/pmgate/domain/usage"
	"github.com/pmgate/pmgate/ports"
)

// Usage is the ports.UsageLedger of one process: the budgets and daily rows
// under one mutex.
type Usage struct {
	mu      sync.Mutex
	budgets map[string]usage.Budget
	rows    map[usage.Key]usage.Row
}

var _ ports.UsageLedger = (*Usage)(nil)

// NewUsage returns an empty ledger.
func NewUsage() *Usage {
	return &Usage{budgets: map[string]usage.Budget{}, rows: map[usage.Key]usage.Row{}}
}

// Budget implements ports.UsageLedger.
func (u *Usage) Budget(_ context.Context, slot string, fn func(b *usage.Budget) error) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	cp := u.budgets[slot]
	if err := fn(&cp); err != nil {
		return err
	}
	u.budgets[slot] = cp
	return nil
}

// Budgets implements ports.UsageLedger.
func (u *Usage) Budgets(context.Context) (map[string]usage.Budget, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make(map[string]usage.Budget, len(u.budgets))
	for k, v := range u.budgets {
		out[k] = v
	}
	return out, nil
}

// Add implements ports.UsageLedger.
func (u *Usage) Add(_ context.Context, rows []usage.Row) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, r := range rows {
		cur, ok := u.rows[r.Key]
		if !ok {
			cur = usage.Row{Key: r.Key}
		}
		cur.Merge(r)
		u.rows[r.Key] = cur
	}
	return nil
}

// Rows implements ports.UsageLedger.
func (u *Usage) Rows(_ context.Context, since, until string) ([]usage.Row, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []usage.Row
	for k, r := range u.rows {
		if k.Day >= since && k.Day <= until {
			out = append(out, r)
		}
	}
	SortRows(out)
	return out, nil
}

// Sweep implements ports.UsageLedger.
func (u *Usage) Sweep(_ context.Context, oldest string) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for k := range u.rows {
		if k.Day < oldest {
			delete(u.rows, k)
			n++
		}
	}
	return n, nil
}

// SortRows sorts rows in the order of ports.UsageLedger.Rows.
func SortRows(rows []usage.Row) {
	slices.SortFunc(rows, func(a, b usage.Row) int {
		return cmp.Or(cmp.Compare(a.Day, b.Day), cmp.Compare(a.Slot, b.Slot), cmp.Compare(a.API, b.API),
			cmp.Compare(a.Model, b.Model), cmp.Compare(a.Strategy, b.Strategy), cmp.Compare(a.Outcome, b.Outcome))
	})
}
