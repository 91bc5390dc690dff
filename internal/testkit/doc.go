// Package testkit is test support shared by several packages' tests: an
// emulator started for a test and closed at its cleanup, and the fixtures of
// a client that drains a turn and echoes it back with tool results, and a
// goroutine-safe output buffer. Only
// tests import it.
package testkit
