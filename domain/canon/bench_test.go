package canon_test

import (
	"testing"

	"pmgate/domain/canon"
	"pmgate/domain/chat"
)

func tenMessages() []chat.Message {
	call := func(id, args string) chat.ToolCall {
		return chat.ToolCall{ID: "call_pmn_" + id, Name: "get_weather", Arguments: args}
	}
	return []chat.Message{
		{Role: chat.RoleSystem, Content: ptr("You are a helpful assistant. Answer briefly and use the tools when needed.")},
		{Role: chat.RoleUser, Content: ptr("What is the weather in Paris and in Oslo today?")},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{
			call("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", `{"city":"Paris","unit":"celsius"}`),
			call("BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", `{"city":"Oslo","unit":"celsius"}`),
		}},
		{Role: chat.RoleTool, ToolCallID: "call_pmn_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", Content: ptr(`{"temp":18,"sky":"clear"}`)},
		{Role: chat.RoleTool, ToolCallID: "call_pmn_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", Content: ptr(`{"temp":-3,"sky":"snow"}`)},
		{Role: chat.RoleAssistant, Content: ptr("Paris: 18°C and clear. Oslo: −3°C with snow.")},
		{Role: chat.RoleUser, Name: "alice", Content: ptr("And Rome?\nPlease include the humidity.")},
		{Role: chat.RoleAssistant, Content: ptr(""), ToolCalls: []chat.ToolCall{
			call("CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", `{"city":"Rome","unit":"celsius","fields":["temp","humidity"]}`),
		}},
		{Role: chat.RoleTool, ToolCallID: "call_pmn_CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", Content: ptr(`{"temp":24,"humidity":0.41}`)},
		{Role: chat.RoleAssistant, Content: ptr("Rome: 24°C, humidity 41%.")},
	}
}

func BenchmarkTranscriptHash(b *testing.B) {
	msgs := tenMessages()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canon.TranscriptHash(msgs); err != nil {
			b.Fatal(err)
		}
	}
}
