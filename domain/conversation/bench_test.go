package conversation_test

import (
	"fmt"
	"runtime"
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

// BenchmarkRetained records b.N anchors shaped like the gateway's — one
// principal, workspace, model and tools hash shared by all, a transcript hash
// and an upstream conversation id of their own — and reports the heap the
// registry keeps for each (B/anchor, strings included): what every one of
// CONVERSATION_MAX_ANCHORS costs a memory store.
func BenchmarkRetained(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	const tools = "sha256:5e0d1b7c3a9f4e2d8c6b0a1f3e5d7c9b2a4f6e8d0c1b3a5f7e9d2c4b6a8f0e1d"
	reg := conversation.NewRegistry(conversation.Limits{MaxAnchors: b.N + 1}, benchPolicy)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for i := range b.N {
		a := conversation.Anchor{PrincipalID: "default", WorkspaceID: "demo-workspace", Model: "bench-model", ToolsHash: tools,
			TranscriptHash:   fmt.Sprintf("transcript.v2:sha256:%064x", i),
			TranscriptLength: 2, ConversationID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), State: conversation.Active,
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if _, err := reg.Record(a, now); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(heap()-before)/float64(b.N), "B/anchor")
	runtime.KeepAlive(reg)
}
