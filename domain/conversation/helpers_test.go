package conversation_test

import (
	"os"
	"testing"
	"time"

	"github.com/pmgate/pmgate/domain/conversation"
	"github.com/pmgate/pmgate/internal/audit"
)

// TestMain runs the tests, writes the row audit and, on a full run, fails
// unless the tests applied every row of the machine.
func TestMain(m *testing.M) {
	os.Exit(audit.Main(m, conversation.Table()))
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
