package pgstore_test

import (
	"testing"

	"github.com/pmgate/pmgate/ports"
	"github.com/pmgate/pmgate/ports/porttest"
)

func TestPostgresAttemptsPassTheAttemptContract(t *testing.T) {
	baseURL(t)
	porttest.AttemptContract(t, func(t *testing.T, maxBytes int64) ports.AttemptStore {
		return open(t, freshSchema(t), limits, porttest.Policy).Attempts(maxBytes)
	})
}
