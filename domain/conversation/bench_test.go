package conversation_test

import (
	"testing"
	"time"

	"github.com/pmgate/pmgate/domain/conversation"
)

var benchPolicy = conversation.Policy{TTL: time.Hour, ClaimTTL: time.Minute, TerminalTTL: time.Hour}

// BenchmarkSelfLoop fires A12 (drop a claimed anchor): a row that changes nothing.
func BenchmarkSelfLoop(b *testing.B) {
	a := conversation.Anchor{State: conversation.Claimed}
	now := time.Unix(1_700_000_000, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Drop(now, benchPolicy); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStateChange fires A01 (an ACTIVE anchor claimed), which runs the
// claim's entry action.
func BenchmarkStateChange(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	req := conversation.Request{Model: "m"}
	b.ReportAllocs()
	for b.Loop() {
		a := conversation.Anchor{State: conversation.Active, Model: "m", ExpiresAt: now.Add(time.Hour)}
		if _, err := a.Claim(now, benchPolicy, req, "claim"); err != nil {
			b.Fatal(err)
		}
	}
}
