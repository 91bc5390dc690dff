package memstore_test

import (
	"testing"

	"github.com/pmgate/pmgate/adapters/memstore"
	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

func TestAttemptContract(t *testing.T) {
	porttest.AttemptContract(t, func(_ *testing.T, maxBytes int64) ports.AttemptStore {
		return memstore.NewAttempts(maxBytes)
	})
}
