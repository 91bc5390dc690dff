//go:build unix

package main

import (
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

// The long-session suites count every tool call id a TOOL_RESPONSE answers
// (single dispatch, counted at the emulator): each of the three forms must
// yield its ids, each once.
func TestSummarizeUpstreamListsTheCallIDsOfEveryToolResponseForm(t *testing.T) {
	is := is.New(t)
	ids := func(body string) []string {
		return summarizeUpstream(emulator.Request{ChatType: emulator.KindToolResponse, Body: []byte(body)}).CallIDs
	}
	is.Equal(ids(`{"input":{"toolCallId":"c1","toolResponse":"sunny"}}`), []string{"c1"})                                                    // flat
	is.Equal(ids(`{"input":{"toolResponses":[{"toolCallId":"c1","content":"a"},{"toolCallId":"c2","content":"b"}]}}`), []string{"c1", "c2"}) // array form
	packed := `{"input":{"toolCallId":"c1","toolResponse":"[{\"toolCallId\":\"c1\",\"status\":\"SUCCESS\",\"content\":\"a\"},{\"toolCallId\":\"c2\",\"status\":\"SUCCESS\",\"content\":\"b\"}]"}}`
	is.Equal(ids(packed), []string{"c1", "c2"})                                                                                                      // web_session packed: the flat id is the first packed one, counted once
	is.Equal(summarizeUpstream(emulator.Request{ChatType: emulator.KindUserQuery, Body: []byte(`{"input":{"query":"hi"}}`)}).CallIDs, []string(nil)) // a USER_QUERY answers no call
}
