package keyring_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/keyring"
	"github.com/pmgate/pmgate/domain/usage"
)

func TestScopeAndLimitsParseAndRoundTrip(t *testing.T) {
	is := is.New(t)
	r, err := keyring.Parse([]byte(file(slot("agent", `,"scope":"admin","limits":{"requests_per_minute":30,"dispatches_per_day":500,"dispatches_per_month":9000}`))), nil)
	is.NoErr(err)
	s := r.Slots[0]
	is.True(s.Admin())
	is.Equal(s.Limits, usage.Limits{RequestsPerMinute: 30, DispatchesPerDay: 500, DispatchesPerMonth: 9000})
	again, err := keyring.Parse(keyring.Marshal(r), nil)
	is.NoErr(err)
	is.Equal(again, r)
	// The default: an inference key without limits, and a file written
	// without them keeps its shape.
	plain, err := keyring.Parse([]byte(file(slot("editor", ""))), nil)
	is.NoErr(err)
	is.Equal(plain.Slots[0].Scope, keyring.ScopeInference)
	is.True(!plain.Slots[0].Admin())
	is.True(plain.Slots[0].Limits.None())
	out := string(keyring.Marshal(plain))
	is.True(!strings.Contains(out, "scope") && !strings.Contains(out, "limits"))
}

func TestBadScopesAndLimitsAreRefused(t *testing.T) {
	for name, c := range map[string]struct{ extra, want string }{
		"unknown scope":      {`,"scope":"root"`, "scope must be inference or admin"},
		"negative rpm":       {`,"limits":{"requests_per_minute":-1}`, "limits.requests_per_minute must be in [0, 100000]"},
		"huge daily quota":   {`,"limits":{"dispatches_per_day":10000001}`, "limits.dispatches_per_day must be in"},
		"huge month quota":   {`,"limits":{"dispatches_per_month":100000001}`, "limits.dispatches_per_month must be in"},
		"unknown limit":      {`,"limits":{"tokens_per_day":5}`, "unknown field"},
		"limits not object":  {`,"limits":5`, "wrong type"},
		"scope not a string": {`,"scope":true`, "wrong type"},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			_, err := keyring.Parse([]byte(file(slot("agent", c.extra))), nil)
			is.True(errs.Has(err, errs.ConfigInvalid))
			is.True(strings.Contains(err.Error(), c.want))
		})
	}
}

func TestSetChangesOneSlotAndRefusesWhatParseRefuses(t *testing.T) {
	is := is.New(t)
	r, err := keyring.Parse([]byte(file(slot("agent", ""))), nil)
	is.NoErr(err)
	next, err := r.Set("agent", nil, func(s *keyring.Slot) { s.Limits.DispatchesPerDay = 10; s.Scope = keyring.ScopeAdmin })
	is.NoErr(err)
	is.Equal(next.Slots[0].Limits.DispatchesPerDay, 10)
	is.True(next.Slots[0].Admin())
	is.Equal(r.Slots[0].Limits.DispatchesPerDay, 0) // the original ring is unchanged
	_, err = r.Set("agent", nil, func(s *keyring.Slot) { s.Limits.RequestsPerMinute = -5 })
	is.True(errs.Has(err, errs.ConfigInvalid))
	_, err = r.Set("nobody", nil, func(*keyring.Slot) {})
	is.True(err != nil)
}
