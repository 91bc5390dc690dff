package canon

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// Properties use t.Fatalf, never is (STYLE A6).

// appendStringByBytes is appendString as it was written first, one byte at a
// time: the oracle of the eight-byte skip.
func appendStringByBytes(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	return append(append(b, s[start:]...), '"')
}

// genText draws text as agents send it: long runs of plain text with, now
// and then, a byte that must be escaped, at any offset from an eight-byte
// boundary, and bytes at and around the escaped ranges' edges.
var genText = rapid.Custom(func(t *rapid.T) string {
	var sb strings.Builder
	edges := []byte{0x00, 0x01, 0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x1f, 0x20, 0x21, '"', 0x23, '[', '\\', ']', 0x7f}
	for range rapid.IntRange(0, 12).Draw(t, "runs") {
		sb.WriteString(strings.Repeat("x", rapid.IntRange(0, 20).Draw(t, "plain")))
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			sb.WriteByte(rapid.SampledFrom(edges).Draw(t, "edge"))
		case 1:
			sb.WriteString(rapid.SampledFrom([]string{"é", "😀", "\u2028", "\xff", "\xc3"}).Draw(t, "rune"))
		case 2:
			sb.WriteString(rapid.String().Draw(t, "any"))
		}
	}
	return sb.String()
})

func TestTheEightByteSkipEscapesAsTheByteLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genText.Draw(t, "s")
		got, err := appendString([]byte("<"), s)
		if (err != nil) == utf8.ValidString(s) {
			t.Fatalf("appendString(%q): %v", s, err)
		}
		if err != nil {
			return
		}
		if want := appendStringByBytes([]byte("<"), s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q):\n got %q\nwant %q", s, got, want)
		}
	})
}

var genMessage = rapid.Custom(func(t *rapid.T) chat.Message {
	text := rapid.OneOf(genText, rapid.Just(""))
	m := chat.Message{Role: chat.Role(rapid.SampledFrom([]string{"system", "developer", "user", "assistant", "tool", "other"}).Draw(t, "role"))}
	if rapid.Bool().Draw(t, "has content") {
		c := text.Draw(t, "content")
		m.Content = &c
	}
	m.Name = text.Draw(t, "name")
	m.ToolCallID = text.Draw(t, "tool_call_id")
	for range rapid.IntRange(0, 3).Draw(t, "calls") {
		args := rapid.OneOf(text, rapid.SampledFrom([]string{`{}`, `{"b":1,"a":[true,null,"x\n"]}`, ` {"path":"a.go"} `, `[1,2]`, `{"a":`})).Draw(t, "arguments")
		m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: text.Draw(t, "id"), Name: text.Draw(t, "name"), Arguments: args})
	}
	return m
})

// A message written member by member has the bytes of its value form
// written by the generic writer, and is refused where that one is.
func TestAMessageWrittenDirectlyIsItsValueFormsBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := genMessage.Draw(t, "m")
		unparsed := rapid.Bool().Draw(t, "arguments as text")
		args := argumentsOf
		if unparsed {
			args = func(int, chat.ToolCall) (Value, bool) { return nil, false }
		}
		got, gotErr := appendMessageV2([]byte("["), m, args)
		want, wantErr := appendValue([]byte("["), messageValueV2(m, args), 0)
		if errs.CodeOf(gotErr) != errs.CodeOf(wantErr) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("errors differ: %v against %v", gotErr, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("message %+v:\n got %s\nwant %s", m, got, want)
		}
	})
}

// A continuation's prepared prefix gives the hash of the transcript it goes
// on to, as hashing that transcript whole does; a copy of the prefix (not the
// messages it was prepared from) is hashed whole, with the same result.
func TestAHashFromThePreparedPrefixIsTheWholeTranscriptsHash(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		msgs := rapid.SliceOfN(genMessage, 0, 6).Draw(t, "msgs")
		n := rapid.IntRange(0, len(msgs)).Draw(t, "prefix")
		more := rapid.SliceOfN(genMessage, 0, 2).Draw(t, "more")
		whole := append(append([]chat.Message(nil), msgs...), more...)
		want, wantErr := TranscriptHashV2(whole, nil, nil)
		e, err := PrepareEcho(msgs[:n], nil)
		if err != nil {
			return // a prefix the echo refuses never reaches a turn
		}
		for _, from := range [][]chat.Message{msgs, append([]chat.Message(nil), msgs...)} {
			got, gotErr := e.TranscriptHashOf(from, more...)
			if (gotErr == nil) != (wantErr == nil) || errs.CodeOf(gotErr) != errs.CodeOf(wantErr) || got != want {
				t.Fatalf("prefix %d of %d, %d more: got %q, %v; want %q, %v", n, len(msgs), len(more), got, gotErr, want, wantErr)
			}
		}
	})
}

// The members that appear only for some roles, written directly, as the
// value form has them (the drawn messages reach these rarely).
func TestTheRoleDependentMembersAreWrittenAsTheValueForm(t *testing.T) {
	empty, text := "", "hi"
	call := []chat.ToolCall{{ID: "call_1", Name: "read", Arguments: `{"path":"a"}`}}
	for _, m := range []chat.Message{
		{Role: chat.RoleAssistant, Content: &empty, ToolCalls: call}, // content null
		{Role: chat.RoleAssistant, Content: &empty},                  // content ""
		{Role: chat.RoleAssistant, Content: &text, Name: "bot", ToolCalls: call},
		{Role: chat.RoleUser, Content: &text, Name: "alice"},
		{Role: chat.RoleTool, Content: &text, ToolCallID: "call_1", Name: "read"},
		{Role: chat.RoleUser, ToolCalls: call},
	} {
		got, err := appendMessageV2(nil, m, argumentsOf)
		if err != nil {
			t.Fatal(err)
		}
		want, err := appendValue(nil, MessageValueV2(m), 0)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%+v:\n got %s\nwant %s", m, got, want)
		}
	}
}
