package correlation_test

import (
	"os"
	"testing"
	"time"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/correlation"
	"github.com/pmgate/pmgate/internal/audit"
)

// TestMain runs the tests, writes the row audit and, on a full run, fails
// unless the tests applied every row of the machine.
func TestMain(m *testing.M) {
	os.Exit(audit.Main(m, correlation.Table()))
}

// record notes, for `make audit`, that test exercised the decision's row.
func record(test string, d correlation.Decision) {
	if d.Row != "" {
		audit.Record(correlation.MachineName, d.Row, test)
	}
}

var (
	t0     = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	policy = correlation.Policy{PendingTTL: 15 * time.Minute, InflightTTL: 150 * time.Second, TerminalTTL: 15 * time.Minute}
)

func str(s string) *string { return &s }

// fixture is a tool-call turn: the transcript prefix the client will echo, the
// tools hash and the group record the gateway admitted for it.
type fixture struct {
	prefix    []chat.Message
	toolsHash string
	defaults  canon.DefaultsByTool
	group     correlation.Group
}

// fixtureSchema is get_weather's parameters: unit defaults to "c".
const fixtureSchema = `{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","default":"c"}}}`

// fataler is the part of testing.TB and *rapid.T the fixtures need.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

func newFixture(tb fataler, key, principal string, ids ...string) fixture {
	tb.Helper()
	calls := make([]chat.ToolCall, len(ids))
	recs := make([]correlation.Call, len(ids))
	for i, id := range ids {
		calls[i] = chat.ToolCall{ID: id, Name: "get_weather", Arguments: `{"city":"Oslo"}`}
		recs[i] = correlation.Call{PublicID: id, UpstreamID: "up-" + id, UpstreamGroupID: "grp-" + key, Index: i,
			OriginalName: "get_weather", ArgumentsJSON: `{"city":"Oslo"}`}
	}
	prefix := []chat.Message{
		{Role: chat.RoleSystem, Content: str("be brief")},
		{Role: chat.RoleUser, Content: str("weather in Oslo?")},
		{Role: chat.RoleAssistant, ToolCalls: calls},
	}
	th, err := canon.TranscriptHashV2(prefix, nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	toolDefs := []chat.Tool{{Name: "get_weather", Parameters: []byte(fixtureSchema)}}
	tools, err := canon.ToolsBinding("", toolDefs)
	if err != nil {
		tb.Fatal(err)
	}
	defaults, err := canon.ToolDefaults(toolDefs)
	if err != nil {
		tb.Fatal(err)
	}
	return fixture{
		prefix:    prefix,
		toolsHash: tools,
		defaults:  defaults,
		group: correlation.Group{
			Key: key, PrincipalID: principal, WorkspaceID: "ws-1", Model: "gpt-5.5", ConversationID: "conv-" + key,
			UpstreamGroupID: "grp-" + key, State: correlation.Pending, IssuedAt: t0, PendingExpiresAt: t0.Add(policy.PendingTTL),
			TranscriptHash: th, TranscriptLength: len(prefix), ToolsHash: tools, Calls: recs,
		},
	}
}

// submission returns the valid submission for the fixture, with the given
// result contents (one per call, in order).
func (f fixture) submission(contents ...string) correlation.Submission {
	msgs := append([]chat.Message(nil), f.prefix...)
	for i, c := range f.group.Calls {
		content := "sunny"
		if i < len(contents) {
			content = contents[i]
		}
		msgs = append(msgs, chat.Message{Role: chat.RoleTool, ToolCallID: c.PublicID, Content: str(content)})
	}
	cont, ok := correlation.SplitContinuation(msgs)
	if !ok {
		panic("fixture: not a continuation")
	}
	return correlation.Submission{PrincipalID: f.group.PrincipalID, WorkspaceID: "ws-1", Model: "gpt-5.5",
		ToolsHash: f.toolsHash, Defaults: f.defaults, Continuation: cont}
}
