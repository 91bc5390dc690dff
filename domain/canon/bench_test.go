package canon_test

import (
	"strings"
	"testing"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
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

func BenchmarkTranscriptHashV2(b *testing.B) {
	msgs := tenMessages()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canon.TranscriptHashV2(msgs, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// echoBench is a continuation prefix of ten messages whose last message echoes
// the issued call with another key order and one schema default added.
func echoBench() ([]chat.Message, canon.DefaultsByTool, []canon.IssuedCall) {
	msgs := tenMessages()[:7]
	id := "call_pmn_DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD"
	msgs = append(msgs, chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{
		{ID: id, Name: "get_weather", Arguments: `{"fields":["temp","humidity"],"unit":"celsius","city":"Rome","days":1}`},
	}})
	d, err := canon.SchemaDefaults([]byte(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","default":1}}}`))
	if err != nil {
		panic(err)
	}
	return msgs, canon.DefaultsByTool{"get_weather": d}, []canon.IssuedCall{{ID: id, Name: "get_weather", Arguments: `{"city":"Rome","unit":"celsius","fields":["temp","humidity"]}`}}
}

// BenchmarkPrepareEcho is the part of the continuation's history check done
// before the store's atomic section.
func BenchmarkPrepareEcho(b *testing.B) {
	msgs, defaults, _ := echoBench()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canon.PrepareEcho(msgs, defaults); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEchoHash is the part done inside the store's atomic section: for
// an echo with a default to drop (the slowest case, the issued arguments are
// parsed) and for a faithful echo (only the last message is hashed).
func BenchmarkEchoHash(b *testing.B) {
	msgs, defaults, issued := echoBench()
	faithful := append([]chat.Message(nil), msgs...)
	faithful[len(faithful)-1] = chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{
		{ID: issued[0].ID, Name: issued[0].Name, Arguments: issued[0].Arguments}}}
	for _, c := range []struct {
		name string
		msgs []chat.Message
	}{{"drop-default", msgs}, {"faithful", faithful}} {
		b.Run(c.name, func(b *testing.B) {
			e, err := canon.PrepareEcho(c.msgs, defaults)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Hash(issued); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCanonicalNumberHugeExponent spells a literal with a 100,000-digit
// exponent: linear work, no arithmetic on the value.
func BenchmarkCanonicalNumberHugeExponent(b *testing.B) {
	lit := "0.00012300e" + strings.Repeat("9", 100_000)
	b.SetBytes(int64(len(lit)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := canon.CanonicalNumber(lit); !ok {
			b.Fatal("refused")
		}
	}
}

// longTranscript is an agent's session: a prompt, rounds tool rounds (a
// call and an output of about outBytes bytes each), and the text answer.
func longTranscript(rounds, outBytes int) []chat.Message {
	out := strings.Repeat("\tif err := run(ctx, \"cmd\"); err != nil {\n\t\treturn err\n\t}\n", outBytes/56+1)[:outBytes]
	msgs := []chat.Message{
		{Role: chat.RoleSystem, Content: ptr("You are a coding agent. Use the tools.")},
		{Role: chat.RoleUser, Content: ptr("Fix the failing test in the repository.")},
	}
	for i := range rounds {
		id := "call_pmn_" + strings.Repeat(string(rune('A'+i%26)), 32)
		msgs = append(msgs,
			chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: id, Name: "read_file",
				Arguments: `{"path":"src/pkg/file.go","offset":` + strings.Repeat("1", 1+i%3) + `,"limit":200}`}}},
			chat.Message{Role: chat.RoleTool, ToolCallID: id, Content: ptr(out)})
	}
	return append(msgs, chat.Message{Role: chat.RoleAssistant, Content: ptr("Done: the test passes now.")})
}

// BenchmarkTranscriptHashV2Long is the hash of a 40-round session with
// 1.5 KB tool outputs (about 60 KB): every turn of such a session hashes its
// transcript before the dispatch and again after the upstream's end.
func BenchmarkTranscriptHashV2Long(b *testing.B) {
	msgs := longTranscript(40, 1500)
	n := 0
	for _, m := range msgs {
		if m.Content != nil {
			n += len(*m.Content)
		}
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canon.TranscriptHashV2(msgs, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolRoundHashes is what one tool round of the same 40-round
// session hashes: its prefix prepared for the echo check before the dispatch,
// then, after the upstream's end, the transcript its next calls are bound to
// — hashed whole, or on from the prepared prefix.
func BenchmarkToolRoundHashes(b *testing.B) {
	all := longTranscript(40, 1500)
	msgs := all[:len(all)-1] // the last round's results end the request
	prefix := msgs[:len(msgs)-1]
	next := chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_pmn_next", Name: "read_file", Arguments: `{"path":"b.go"}`}}}
	for _, c := range []struct {
		name string
		bind func(e *canon.Echo) (string, error)
	}{
		{"whole", func(*canon.Echo) (string, error) {
			return canon.TranscriptHashV2(append(append([]chat.Message(nil), msgs...), next), nil, nil)
		}},
		{"from-the-prefix", func(e *canon.Echo) (string, error) { return e.TranscriptHashOf(msgs, next) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e, err := canon.PrepareEcho(prefix, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.bind(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
