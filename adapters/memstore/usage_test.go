package memstore_test

import (
	"testing"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

func TestUsageContract(t *testing.T) {
	porttest.UsageContract(t, func(t *testing.T) ports.UsageLedger { return memstore.NewUsage() })
}

func BenchmarkUsageAdmit(b *testing.B) { porttest.BenchUsageAdmit(b, memstore.NewUsage()) }
