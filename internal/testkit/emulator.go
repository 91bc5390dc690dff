package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// The credentials and names of BothStrategies. The secrets contain "SECRET" so
// that leak checks can look for that word.
const (
	Subdomain = "acme"
	Cookie    = "sid-SECRET-cookie-0123456789"
	Token     = "tok-SECRET-token-9876543210"
	Workspace = "ws-1234"
)

// BothStrategies is an emulator configuration that accepts both upstream
// strategies (web_session with Cookie on Subdomain, access_token with Token)
// for Workspace, with a short slow-stream delay.
func BothStrategies() emulator.Config {
	return emulator.Config{
		WorkspaceID:   Workspace,
		Subdomain:     Subdomain,
		SessionCookie: Cookie,
		AccessToken:   Token,
		SlowDelay:     20 * time.Millisecond,
	}
}

// StartEmulator starts an emulator with BothStrategies as changed by mutate,
// with its CA in a temporary directory of t, and closes it at t's cleanup.
func StartEmulator(t testing.TB, mutate ...func(*emulator.Config)) *emulator.Server {
	t.Helper()
	cfg := BothStrategies()
	cfg.CADir = t.TempDir()
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := emulator.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("emulator: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
