package httpapi

import (
	"crypto/subtle"
	"reflect"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
)

// SwapCompare replaces the key comparison for one test and returns the
// function that restores it. Tests that use it must not run in parallel.
func SwapCompare(f func(a, b []byte) int) (restore func()) {
	old := constantTimeCompare
	constantTimeCompare = f
	return func() { constantTimeCompare = old }
}

// CompareIsConstantTime says whether the key comparison in use is
// crypto/subtle.ConstantTimeCompare.
func CompareIsConstantTime() bool {
	return reflect.ValueOf(constantTimeCompare).Pointer() == reflect.ValueOf(subtle.ConstantTimeCompare).Pointer()
}

// CheckText is checkText, for the fuzz target.
var CheckText = rules.CheckText

// testServer is a server of cfg as NewServer builds it, for the tests of one
// translation alone (no handler, no service).
func testServer(cfg Config) *server { return &server{cfg: cfg, in: settingsOf(cfg)} }
