package conversation_test

import (
	"os"
	"testing"
	"time"

	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/internal/audit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := audit.Flush(); err != nil {
		println("audit flush:", err.Error())
		code = 1
	}
	os.Exit(code)
}

// record notes, for `make audit`, that test exercised the decision's rows.
func record(test string, d conversation.Decision) {
	if d.Via != "" {
		audit.Record(conversation.MachineName, d.Via, test)
	}
	if d.Row != "" {
		audit.Record(conversation.MachineName, d.Row, test)
	}
}

var (
	t0     = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	policy = conversation.Policy{TTL: 30 * time.Minute, ClaimTTL: 150 * time.Second, TerminalTTL: 15 * time.Minute}
	req    = conversation.Request{WorkspaceID: "ws", Model: "m", ToolsHash: "tools"}
)

func anchor(principal, hash string, now time.Time) conversation.Anchor {
	return conversation.Anchor{PrincipalID: principal, WorkspaceID: "ws", Model: "m", ToolsHash: "tools",
		TranscriptHash: hash, TranscriptLength: 2, ConversationID: "conv-" + hash, State: conversation.Active,
		CreatedAt: now, ExpiresAt: now.Add(policy.TTL)}
}
