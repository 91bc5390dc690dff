package postman_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/chat"
)

// ownText is what the client wrote in msgs: message contents, tool-call names
// and arguments, in UTF-16 code units. Everything else in the upstream query
// is the transcript's framing (role headers, separators, call ids).
func ownText(msgs []chat.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Content != nil {
			n += postman.QueryChars(*m.Content)
		}
		for _, c := range m.ToolCalls {
			n += postman.QueryChars(c.Name) + postman.QueryChars(c.Arguments)
		}
	}
	return n
}

// TestTheTranscriptFramingStaysSmall pins how many characters of the query
// budget the serializer spends on framing, for the transcripts agents send:
// every character of the 10,000-unit budget should be the client's own text.
// A change that makes the framing larger must change these numbers on purpose.
func TestTheTranscriptFramingStaysSmall(t *testing.T) {
	is := is.New(t)
	system := str(strings.Repeat("You are a coding agent. ", 40))
	roundTrip := []chat.Message{
		{Role: chat.RoleSystem, Content: system},
		{Role: chat.RoleUser, Content: str("List the files, then summarise them.")},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_pmn_2Qm9VxR4tLk8", Name: "bash", Arguments: `{"command":"ls"}`}}},
		{Role: chat.RoleTool, ToolCallID: "call_pmn_2Qm9VxR4tLk8", Content: str("README.md\ngo.mod\nmain.go")},
		{Role: chat.RoleAssistant, Content: str("Three files: a README, the module file and main.go.")},
		{Role: chat.RoleUser, Content: str("Thanks. What does main.go do?")},
	}
	for _, c := range []struct {
		name     string
		msgs     []chat.Message
		overhead int
	}{
		{"one user message", roundTrip[1:2], 0},
		{"system + user", roundTrip[:2], 18},
		{"six messages with a tool round trip", roundTrip, 168},
		{"developer + system + user", []chat.Message{{Role: chat.RoleDeveloper, Content: system}, roundTrip[0], roundTrip[1]}, 32},
		{"a named user", []chat.Message{roundTrip[0], {Role: chat.RoleUser, Name: "alice", Content: str("hi")}}, 29},
	} {
		got := postman.QueryChars(postman.Transcript(c.msgs)) - ownText(c.msgs)
		t.Logf("%s: %d framing characters", c.name, got)
		is.Equal(got, c.overhead) // framing characters
		ids := 0
		for _, m := range c.msgs {
			ids += len(m.ToolCallID)
			for _, tc := range m.ToolCalls {
				ids += len(tc.ID) + len(`[{"id":"","name":"","arguments":""}]`)
			}
		}
		is.True(got-ids <= 24*len(c.msgs)) // a header and a blank line per message, no more
	}
}
