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
// not to the code under test, and net/http's own half-second linger of a
// server connection whose handler refused a request before reading all of
// its body (closeWriteAndWait, RST avoidance): it ends by itself, and on a
// loaded machine it can outlast the check's retries.
func Main(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*conn).closeWriteAndWait"))
}
