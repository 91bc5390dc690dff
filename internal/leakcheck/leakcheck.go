// Package leakcheck is the one goroutine-leak check of the test suites: a
// package's TestMain calls Main, and the package fails when a test leaves a
// goroutine behind. It imports nothing of pmgate, so any package's tests may
// use it without an import cycle.
package leakcheck

import (
	"testing"

	"go.uber.org/goleak"
)

// Main runs the tests and then fails when a goroutine is left behind, except
// the tests' own idle HTTP client connections, which belong to the client,
// not to the code under test.
func Main(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}
