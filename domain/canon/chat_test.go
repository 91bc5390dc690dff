package canon_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

func ptr[T any](v T) *T { return &v }

// transcript is a typical tool-call turn: system, user, and the assistant message
// the gateway produced with public ids.
func transcript() []chat.Message {
	return []chat.Message{
		{Role: chat.RoleSystem, Content: ptr("You are a helpful assistant.")},
		{Role: chat.RoleDeveloper, Content: ptr("Prefer metric units.")},
		{Role: chat.RoleUser, Name: "alice", Content: ptr("Weather in Paris and Oslo?")},
		{Role: chat.RoleAssistant, Content: nil, ToolCalls: []chat.ToolCall{
			{ID: "call_pmn_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{ID: "call_pmn_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", Name: "get_weather", Arguments: `{"city": "Oslo"}`},
		}},
		{Role: chat.RoleTool, ToolCallID: "call_pmn_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", Content: ptr("18°C")},
	}
}

func mustTranscriptHash(t *testing.T, msgs []chat.Message) string {
	t.Helper()
	is := is.New(t)
	h, err := canon.TranscriptHash(msgs)
	is.NoErr(err) // transcript hashes
	return h
}

func marshalString(t *testing.T, v canon.Value) string {
	t.Helper()
	is := is.New(t)
	b, err := canon.Marshal(v)
	is.NoErr(err) // value marshals
	return string(b)
}

func TestAssistantEchoFormsGiveTheSameCanonicalMessage(t *testing.T) {
	is := is.New(t)
	calls := []chat.ToolCall{{ID: "call_pmn_x", Name: "f", Arguments: `{}`}}
	null := chat.Message{Role: chat.RoleAssistant, Content: nil, ToolCalls: calls}               // content null or absent
	empty := chat.Message{Role: chat.RoleAssistant, Content: ptr(""), ToolCalls: calls}          // content ""
	named := chat.Message{Role: chat.RoleAssistant, Name: "bot", Content: nil, ToolCalls: calls} // optional name echoed
	is.Equal(canon.MessageValue(null), canon.MessageValue(empty))                                // "" and null are the same with tool calls
	is.Equal(canon.MessageValue(null), canon.MessageValue(named))                                // assistant name is ignored
	is.Equal(marshalString(t, canon.MessageValue(empty)),
		`{"content":null,"role":"assistant","tool_calls":[{"arguments":"{}","id":"call_pmn_x","name":"f"}]}`) // documented form
	pre := transcript()[:3]
	hNull := mustTranscriptHash(t, append(append([]chat.Message{}, pre...), null))
	hEmpty := mustTranscriptHash(t, append(append([]chat.Message{}, pre...), empty))
	hNamed := mustTranscriptHash(t, append(append([]chat.Message{}, pre...), named))
	is.Equal(hNull, hEmpty) // transcript hash agrees for null and ""
	is.Equal(hNull, hNamed) // and when the assistant name is echoed
}

func TestTextPartsJoinedByTheCallerHashLikeAString(t *testing.T) {
	is := is.New(t)
	calls := []chat.ToolCall{{ID: "call_pmn_x", Name: "f", Arguments: `{}`}}
	asString := chat.Message{Role: chat.RoleAssistant, Content: ptr("Let me check."), ToolCalls: calls}
	parts := []string{"Let me ", "check."}
	asParts := chat.Message{Role: chat.RoleAssistant, Content: ptr(strings.Join(parts, "")), ToolCalls: calls}
	is.Equal(mustTranscriptHash(t, []chat.Message{asString}), mustTranscriptHash(t, []chat.Message{asParts})) // joined parts equal the string form
}

func TestAssistantWithoutToolCallsKeepsEmptyContentDistinctFromNull(t *testing.T) {
	is := is.New(t)
	empty := chat.Message{Role: chat.RoleAssistant, Content: ptr("")}
	null := chat.Message{Role: chat.RoleAssistant}
	is.Equal(marshalString(t, canon.MessageValue(empty)), `{"content":"","role":"assistant"}`)  // "" kept without tool calls
	is.Equal(marshalString(t, canon.MessageValue(null)), `{"content":null,"role":"assistant"}`) // null kept
}

func TestMessageValueHasOnlyTheDocumentedMembers(t *testing.T) {
	cases := []struct {
		name string
		msg  chat.Message
		want string
	}{
		{"system with name", chat.Message{Role: chat.RoleSystem, Name: "ops", Content: ptr("s")}, `{"content":"s","name":"ops","role":"system"}`},
		{"user without name", chat.Message{Role: chat.RoleUser, Content: ptr("u")}, `{"content":"u","role":"user"}`},
		{"user with stray tool fields", chat.Message{Role: chat.RoleUser, Content: ptr("u"), ToolCallID: "x", ToolCalls: []chat.ToolCall{{ID: "y"}}}, `{"content":"u","role":"user"}`},
		{"developer null content", chat.Message{Role: chat.RoleDeveloper}, `{"content":null,"role":"developer"}`},
		{"tool", chat.Message{Role: chat.RoleTool, Name: "t", ToolCallID: "call_1", Content: ptr("")}, `{"content":"","name":"t","role":"tool","tool_call_id":"call_1"}`},
		{"assistant text", chat.Message{Role: chat.RoleAssistant, Name: "bot", Content: ptr("hi")}, `{"content":"hi","role":"assistant"}`},
		{"assistant empty tool call list", chat.Message{Role: chat.RoleAssistant, Content: ptr(""), ToolCalls: []chat.ToolCall{}}, `{"content":"","role":"assistant"}`},
		{"assistant calls with text", chat.Message{Role: chat.RoleAssistant, Content: ptr("ok"), ToolCalls: []chat.ToolCall{{ID: "b", Name: "n", Arguments: "x"}, {ID: "a", Name: "m", Arguments: ""}}},
			`{"content":"ok","role":"assistant","tool_calls":[{"arguments":"x","id":"b","name":"n"},{"arguments":"","id":"a","name":"m"}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(marshalString(t, canon.MessageValue(c.msg)), c.want) // canonical message form
		})
	}
}

func TestChangingOneByteChangesTranscriptHash(t *testing.T) {
	base := mustTranscriptHash(t, transcript())
	flip := func(s string) string { b := []byte(s); b[len(b)-1] ^= 1; return string(b) }
	cases := map[string]func(m []chat.Message){
		"tool call id":       func(m []chat.Message) { m[3].ToolCalls[1].ID = flip(m[3].ToolCalls[1].ID) },
		"tool call name":     func(m []chat.Message) { m[3].ToolCalls[0].Name = flip(m[3].ToolCalls[0].Name) },
		"argument string":    func(m []chat.Message) { m[3].ToolCalls[1].Arguments = `{"city":"Oslo"}` },
		"argument byte":      func(m []chat.Message) { m[3].ToolCalls[0].Arguments = flip(m[3].ToolCalls[0].Arguments) },
		"system text":        func(m []chat.Message) { m[0].Content = ptr(flip(*m[0].Content)) },
		"developer text":     func(m []chat.Message) { m[1].Content = ptr(flip(*m[1].Content)) },
		"user text":          func(m []chat.Message) { m[2].Content = ptr(flip(*m[2].Content)) },
		"user name":          func(m []chat.Message) { m[2].Name = flip(m[2].Name) },
		"tool text":          func(m []chat.Message) { m[4].Content = ptr(flip(*m[4].Content)) },
		"tool call id ref":   func(m []chat.Message) { m[4].ToolCallID = flip(m[4].ToolCallID) },
		"role":               func(m []chat.Message) { m[1].Role = chat.RoleSystem },
		"assistant text":     func(m []chat.Message) { m[3].Content = ptr(" ") },
		"user text to null":  func(m []chat.Message) { m[2].Content = nil },
		"user text to empty": func(m []chat.Message) { m[2].Content = ptr("") },
		"trailing space":     func(m []chat.Message) { m[2].Content = ptr(*m[2].Content + " ") },
		"call order":         func(m []chat.Message) { m[3].ToolCalls[0], m[3].ToolCalls[1] = m[3].ToolCalls[1], m[3].ToolCalls[0] },
		"message order":      func(m []chat.Message) { m[0], m[1] = m[1], m[0] },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			m := transcript()
			mutate(m)
			is.True(mustTranscriptHash(t, m) != base) // every exact field is bound
		})
	}
	t.Run("removed message", func(t *testing.T) {
		is := is.New(t)
		is.True(mustTranscriptHash(t, transcript()[:4]) != base) // prefix length is bound
	})
}

func TestTranscriptHashRefusesInvalidUTF8(t *testing.T) {
	is := is.New(t)
	m := transcript()
	m[2].Content = ptr("bad \xff")
	_, err := canon.TranscriptHash(m)
	is.True(errs.Has(err, errs.InvalidRequest)) // invalid text is refused, not replaced
}

func TestSchemaHashIgnoresKeyOrderAndWhitespaceButNotValues(t *testing.T) {
	is := is.New(t)
	a, err := canon.SchemaHash([]byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`))
	is.NoErr(err) // schema hashes
	b, err := canon.SchemaHash([]byte(" {\n \"required\": [\"city\"],\n \"properties\": {\"city\": {\"type\": \"string\"}},\n \"type\": \"object\"\n}\n"))
	is.NoErr(err)  // reformatted schema hashes
	is.Equal(a, b) // same schema, different spelling
	c, err := canon.SchemaHash([]byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["City"]}`))
	is.NoErr(err)   // changed schema hashes
	is.True(a != c) // a changed value changes the hash
}

func TestSchemaHashOfAbsentParametersIsNull(t *testing.T) {
	is := is.New(t)
	want, err := canon.Hash(map[string]canon.Value{"kind": "schema", "schema": nil})
	is.NoErr(err) // reference hashes
	h1, err := canon.SchemaHash(nil)
	is.NoErr(err) // nil parameters hash
	h2, err := canon.SchemaHash([]byte{})
	is.NoErr(err)      // empty parameters hash
	is.Equal(h1, want) // nil is null
	is.Equal(h2, want) // empty is null
	h3, err := canon.SchemaHash([]byte("null"))
	is.NoErr(err)      // literal null hashes
	is.Equal(h3, want) // and is the same null
}

func TestSchemaHashRefusesInvalidJSON(t *testing.T) {
	is := is.New(t)
	_, err := canon.SchemaHash([]byte(`{"type":"object","type":"array"}`))
	is.True(errs.Has(err, errs.InvalidRequest)) // duplicate keys are refused
	_, err = canon.SchemaHash([]byte(" "))
	is.True(errs.Has(err, errs.InvalidRequest)) // whitespace is not an absent schema
}

func weatherTools() []chat.Tool {
	return []chat.Tool{
		{Name: "get_weather", Description: "Current weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`), Strict: ptr(true)},
		{Name: "noop"},
	}
}

func TestToolsHashBindsEveryToolFieldAndTheChoice(t *testing.T) {
	auto := chat.ToolChoice{Mode: chat.ToolChoiceAuto}
	base, err := canon.ToolsHash(weatherTools(), auto)
	is.New(t).NoErr(err) // tools hash
	cases := map[string]func(ts []chat.Tool, c *chat.ToolChoice) []chat.Tool{
		"name":        func(ts []chat.Tool, _ *chat.ToolChoice) []chat.Tool { ts[0].Name = "get_weathe"; return ts },
		"description": func(ts []chat.Tool, _ *chat.ToolChoice) []chat.Tool { ts[1].Description = " "; return ts },
		"schema value": func(ts []chat.Tool, _ *chat.ToolChoice) []chat.Tool {
			ts[0].Parameters = []byte(`{"type":"object"}`)
			return ts
		},
		"schema added":  func(ts []chat.Tool, _ *chat.ToolChoice) []chat.Tool { ts[1].Parameters = []byte(`{}`); return ts },
		"strict false":  func(ts []chat.Tool, _ *chat.ToolChoice) []chat.Tool { ts[0].Strict = ptr(false); return ts },
		"strict absent": func(ts []chat.Tool, _ *chat.ToolChoice) []chat.Tool { ts[0].Strict = nil; return ts },
		"tool order":    func(ts []chat.Tool, _ *chat.ToolChoice) []chat.Tool { ts[0], ts[1] = ts[1], ts[0]; return ts },
		"tool removed":  func(ts []chat.Tool, _ *chat.ToolChoice) []chat.Tool { return ts[:1] },
		"choice mode":   func(ts []chat.Tool, c *chat.ToolChoice) []chat.Tool { c.Mode = chat.ToolChoiceRequired; return ts },
		"choice function": func(ts []chat.Tool, c *chat.ToolChoice) []chat.Tool {
			*c = chat.ToolChoice{Mode: chat.ToolChoiceFunction, Function: "noop"}
			return ts
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			c := auto
			ts := mutate(weatherTools(), &c)
			h, err := canon.ToolsHash(ts, c)
			is.NoErr(err)      // mutated tools hash
			is.True(h != base) // the change is bound
		})
	}
}

func TestToolsHashIgnoresSchemaSpelling(t *testing.T) {
	is := is.New(t)
	choice := chat.ToolChoice{Mode: chat.ToolChoiceFunction, Function: "get_weather"}
	a, err := canon.ToolsHash(weatherTools(), choice)
	is.NoErr(err) // tools hash
	ts := weatherTools()
	ts[0].Parameters = []byte("{ \"properties\" : { \"city\" : { \"type\" : \"string\" } } , \"type\" : \"object\" }")
	b, err := canon.ToolsHash(ts, choice)
	is.NoErr(err)  // respelled tools hash
	is.Equal(a, b) // schema key order and whitespace do not matter
}

func TestToolsHashIgnoresFunctionNameOutsideFunctionMode(t *testing.T) {
	is := is.New(t)
	a, err := canon.ToolsHash(nil, chat.ToolChoice{Mode: chat.ToolChoiceNone})
	is.NoErr(err) // empty tools hash
	b, err := canon.ToolsHash([]chat.Tool{}, chat.ToolChoice{Mode: chat.ToolChoiceNone, Function: "stale"})
	is.NoErr(err)  // stale function name hashes
	is.Equal(a, b) // function is null unless the mode is "function"; nil and empty tool lists agree
}

func TestToolsHashRefusesAnInvalidSchema(t *testing.T) {
	is := is.New(t)
	ts := weatherTools()
	ts[1].Parameters = []byte(`{"type":`)
	_, err := canon.ToolsHash(ts, chat.ToolChoice{Mode: chat.ToolChoiceAuto})
	is.True(errs.Has(err, errs.InvalidRequest)) // a broken schema is an invalid request
}

func TestArgumentsHashKeepsTheExactArgumentString(t *testing.T) {
	is := is.New(t)
	sh, err := canon.SchemaHash([]byte(`{"type":"object"}`))
	is.NoErr(err) // schema hashes
	a, err := canon.ArgumentsHash("get_weather", `{"city":"Paris"}`, sh)
	is.NoErr(err) // arguments hash
	b, err := canon.ArgumentsHash("get_weather", `{"city": "Paris"}`, sh)
	is.NoErr(err)   // respaced arguments hash
	is.True(a != b) // arguments are not parsed: whitespace matters
	c, err := canon.ArgumentsHash("get_weathers", `{"city":"Paris"}`, sh)
	is.NoErr(err)   // renamed call hashes
	is.True(a != c) // name is bound
	d, err := canon.ArgumentsHash("get_weather", `{"city":"Paris"}`, "sha256:00")
	is.NoErr(err)   // other schema hashes
	is.True(a != d) // schema hash is bound
	_, err = canon.ArgumentsHash("get_weather", "{not json", sh)
	is.NoErr(err) // invalid JSON arguments are still a string and hash
}

func TestResultsHashIsAnOrderedListOfPairs(t *testing.T) {
	is := is.New(t)
	r1 := canon.Result{PublicID: "call_pmn_a", Content: "18°C"}
	r2 := canon.Result{PublicID: "call_pmn_b", Content: "-3°C"}
	ab, err := canon.ResultsHash([]canon.Result{r1, r2})
	is.NoErr(err) // results hash
	ba, err := canon.ResultsHash([]canon.Result{r2, r1})
	is.NoErr(err)     // reordered results hash
	is.True(ab != ba) // order is bound
	split1, _ := canon.ResultsHash([]canon.Result{{PublicID: "ab", Content: "c"}})
	split2, _ := canon.ResultsHash([]canon.Result{{PublicID: "a", Content: "bc"}})
	is.True(split1 != split2) // the id/content boundary is unambiguous
	same, _ := canon.ResultsHash([]canon.Result{r1, r2})
	is.Equal(ab, same) // deterministic
}

func TestDifferentKindsNeverShareAHash(t *testing.T) {
	is := is.New(t)
	seen := map[string]string{}
	add := func(kind string, h string, err error) {
		is.NoErr(err) // hash computed
		_, dup := seen[h]
		is.True(!dup) // no two kinds share a hash
		seen[h] = kind
	}
	h, err := canon.TranscriptHash(nil)
	add("transcript", h, err)
	h, err = canon.SchemaHash(nil)
	add("schema", h, err)
	h, err = canon.ToolsHash(nil, chat.ToolChoice{})
	add("tools", h, err)
	h, err = canon.ArgumentsHash("", "", "")
	add("arguments", h, err)
	h, err = canon.ResultsHash(nil)
	add("results", h, err)
	h, err = canon.Hash(nil)
	add("raw null", h, err)
}
