package main

import (
	"testing"

	"github.com/pmgate/pmgate/internal/leakcheck"
)

// TestMain fails the package when a test leaves a goroutine behind.
func TestMain(m *testing.M) { leakcheck.Main(m) }
