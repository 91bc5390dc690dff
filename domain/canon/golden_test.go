package canon_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json from the current implementation")

const vectorsPath = "testdata/vectors.json"

// vector is one golden case. Exactly one of Input (a JSON text given to
// ParseJSON), Number (a number literal given to CanonicalNumber, whose
// canonical spelling is hashed as a Number) and Chat (a description of a
// chat-level input built by chatCases) is set. Canonical and Hash are the
// expected outputs; Error is the expected error code for a refused input. An
// echo vector (a chat vector of echoCases) also has IssuedHash, the
// admission's hash of the issued transcript, and Match, whether the echo's
// Hash equals it.
type vector struct {
	Name       string `json:"name"`
	Input      string `json:"input,omitempty"`
	Number     string `json:"number,omitempty"`
	Chat       string `json:"chat,omitempty"`
	Canonical  string `json:"canonical,omitempty"`
	Hash       string `json:"hash,omitempty"`
	IssuedHash string `json:"issued_hash,omitempty"`
	Match      *bool  `json:"match,omitempty"`
	Error      string `json:"error,omitempty"`
}

// jsonCases are the JSON-text vectors, in file order.
var jsonCases = []struct{ name, input string }{
	{"null", `null`},
	{"true", `true`},
	{"false", `false`},
	{"empty-object", `{}`},
	{"empty-array", `[]`},
	{"empty-string", `""`},
	{"whitespace-dropped", " {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\" : null } "},
	{"keys-sorted", `{"b":1,"c":2,"a":3}`},
	{"keys-differing-only-in-case", `{"a":1,"B":2,"b":3,"A":4}`},
	{"keys-prefixes-of-each-other", `{"abc":1,"ab":2,"a":3,"":4,"abcd":5}`},
	{"keys-non-ascii", `{"日本":1,"é":2,"z":3,"€":4,"😀":5,"ÿ":6,"Z":7}`},
	{"keys-utf8-order-not-utf16-order", `{"😀":1,"｡":2}`},
	{"keys-escaped-in-input", `{"\u0062":1,"a":2,"\u00e9":3}`},
	{"nested-objects-and-arrays", `{"z":{"y":[{"b":[],"a":{}}],"x":[[1,[2,[3]]]]},"a":[{"d":null,"c":true}]}`},
	{"array-order-kept", `[3,1,2,"b","a",[2,1]]`},
	{"explicit-null-members", `{"b":null,"a":[null,{"n":null}]}`},
	{"escapes-short-forms", `"quote\" backslash\\ bs\b ff\f nl\n cr\r tab\t"`},
	{"escape-solidus-written-raw", `"a\/b/c"`},
	{"control-bytes-lowercase-hex", `"\u0000\u0001\u0007\u000b\u000e\u001A\u001f"`},
	{"del-and-html-characters-raw", `"\u007f<script>&amp;'"`},
	{"line-and-paragraph-separators-raw", `"a\u2028b\u2029c"`},
	{"non-ascii-raw", `"caf\u00e9 日本語 Ω ß"`},
	{"emoji-astral-from-surrogate-escapes", `"\ud83d\ude00"`},
	{"emoji-astral-raw", `"😀 👍🏽 𝄞"`},
	{"nfc-e-acute", "\"\u00e9\""},
	{"nfd-e-acute", "\"e\u0301\""},
	{"number-1", `1`},
	{"number-1.0", `1.0`},
	{"number-negative-zero", `-0`},
	{"number-1e3", `1e3`},
	{"number-1E+3", `1E+3`},
	{"number-huge-literal", `-123456789012345678901234567890.000000000000000000001e-999`},
	{"numbers-in-array", `[1,1.0,-0,0,1e3,0.5,-12.34e-5]`},
	{"mixed-document", `{"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}}],"n":[true,false,null,0.1]}`},
	{"error-duplicate-key", `{"a":1,"a":2}`},
	{"error-duplicate-key-after-unescape", `{"a":1,"\u0061":2}`},
	{"error-trailing-data", `{} {}`},
	{"error-trailing-comma", `[1,]`},
	{"error-leading-zero", `01`},
	{"error-lone-high-surrogate", `"\ud83d"`},
	{"error-lone-low-surrogate", `"\ude00"`},
	{"error-raw-control-in-string", "\"a\tb\""},
	{"error-byte-order-mark", "\ufeff{}"},
	{"error-whitespace-only", " "},
}

// numberCases are the CanonicalNumber vectors: the spelling of a number by
// value is part of every value-form transcript hash.
var numberCases = []struct{ name, input string }{
	{"number-value-1", "1"},
	{"number-value-1.0", "1.0"},
	{"number-value-1e0", "1e0"},
	{"number-value-10e-1", "10e-1"},
	{"number-value-negative-zero", "-0.0"},
	{"number-value-100", "100"},
	{"number-value-0.5", "0.5"},
	{"number-value-trailing-zeros", "-12.340e-5"},
	{"number-value-exponent-leading-zeros", "1E+007"},
	{"number-value-huge-exponent", "0.0000001e10000000000000000000"},
	{"number-value-huge-negative-exponent", "100e-10000000000000000000"},
}

// chatCase is a chat-level vector: doc is the canonical document the package
// documentation promises; hash is the package function under test. For an
// echo vector, issued is the admission hash the echo is compared with and
// match the expected outcome.
type chatCase struct {
	name, desc string
	doc        func() canon.Value
	hash       func() (string, error)
	issued     func() (string, error)
	match      bool
}

func goldenTranscript() []chat.Message {
	return []chat.Message{
		{Role: chat.RoleSystem, Content: ptr("You are a helpful assistant.")},
		{Role: chat.RoleUser, Name: "alice", Content: ptr("What's the weather in Paris and Oslo? <b>&</b>")},
		{Role: chat.RoleAssistant, Content: ptr(""), ToolCalls: []chat.ToolCall{
			{ID: "call_pmn_3q2+7wAAAAAAAAAAAAAAAAAAAAAAAAAA", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{ID: "call_pmn_Zm9vYmFyYmF6cXV4cXV1eHh4eHh4eHh4", Name: "get_weather", Arguments: "{\"city\": \"Oslo\",\n \"unit\":\"c\"}"},
		}},
	}
}

func goldenTools() []chat.Tool {
	return []chat.Tool{
		{Name: "get_weather", Description: "Current weather for a city.",
			Parameters: []byte(`{ "type": "object", "required": ["city"], "properties": { "unit": {"enum": ["c", "f"]}, "city": {"type": "string"} } }`),
			Strict:     ptr(true)},
		{Name: "noop", Description: ""},
	}
}

const goldenSchema = `{ "type": "object", "required": ["city"], "properties": { "unit": {"enum": ["c", "f"]}, "city": {"type": "string"} } }`

func mustParse(s string) canon.Value {
	v, err := canon.ParseJSON([]byte(s))
	if err != nil {
		panic(err)
	}
	return v
}

func mustSchemaHash(s string) string {
	h, err := canon.SchemaHash([]byte(s))
	if err != nil {
		panic(err)
	}
	return h
}

var chatCases = []chatCase{
	{
		name: "transcript-system-user-assistant-with-tool-calls",
		desc: `TranscriptHash of goldenTranscript(): system; user named "alice"; assistant with content "" and two get_weather calls (exact argument strings, one with a newline)`,
		doc: func() canon.Value {
			ms := []canon.Value{}
			for _, m := range goldenTranscript() {
				ms = append(ms, canon.MessageValue(m))
			}
			return map[string]canon.Value{"kind": "transcript", "messages": ms}
		},
		hash: func() (string, error) { return canon.TranscriptHash(goldenTranscript()) },
	},
	{
		name: "transcript-with-tool-result-and-developer",
		desc: `TranscriptHash of goldenTranscript() + developer "Use metric." + tool result "18°C" for the first call`,
		doc: func() canon.Value {
			ms := []canon.Value{}
			for _, m := range goldenTranscript() {
				ms = append(ms, canon.MessageValue(m))
			}
			ms = append(ms,
				map[string]canon.Value{"role": "developer", "content": "Use metric."},
				map[string]canon.Value{"role": "tool", "content": "18°C", "tool_call_id": "call_pmn_3q2+7wAAAAAAAAAAAAAAAAAAAAAAAAAA"})
			return map[string]canon.Value{"kind": "transcript", "messages": ms}
		},
		hash: func() (string, error) {
			ms := append(goldenTranscript(),
				chat.Message{Role: chat.RoleDeveloper, Content: ptr("Use metric.")},
				chat.Message{Role: chat.RoleTool, ToolCallID: "call_pmn_3q2+7wAAAAAAAAAAAAAAAAAAAAAAAAAA", Content: ptr("18°C")})
			return canon.TranscriptHash(ms)
		},
	},
	{
		name: "transcript-empty",
		desc: "TranscriptHash of no messages",
		doc:  func() canon.Value { return map[string]canon.Value{"kind": "transcript", "messages": []canon.Value{}} },
		hash: func() (string, error) { return canon.TranscriptHash(nil) },
	},
	{
		name: "schema-object",
		desc: "SchemaHash of goldenSchema (unsorted keys, extra whitespace)",
		doc:  func() canon.Value { return map[string]canon.Value{"kind": "schema", "schema": mustParse(goldenSchema)} },
		hash: func() (string, error) { return canon.SchemaHash([]byte(goldenSchema)) },
	},
	{
		name: "schema-absent",
		desc: "SchemaHash of nil parameters",
		doc:  func() canon.Value { return map[string]canon.Value{"kind": "schema", "schema": nil} },
		hash: func() (string, error) { return canon.SchemaHash(nil) },
	},
	{
		name: "tools-with-schema-and-function-choice",
		desc: `ToolsHash of goldenTools() (get_weather with goldenSchema and strict=true; noop without schema or strict) and tool_choice function "get_weather"`,
		doc: func() canon.Value {
			return map[string]canon.Value{"kind": "tools",
				"tools": []canon.Value{
					map[string]canon.Value{"name": "get_weather", "description": "Current weather for a city.", "parameters": mustParse(goldenSchema), "strict": true},
					map[string]canon.Value{"name": "noop", "description": "", "parameters": nil, "strict": nil},
				},
				"tool_choice": map[string]canon.Value{"mode": "function", "function": "get_weather"}}
		},
		hash: func() (string, error) {
			return canon.ToolsHash(goldenTools(), chat.ToolChoice{Mode: chat.ToolChoiceFunction, Function: "get_weather"})
		},
	},
	{
		name: "tools-empty-auto",
		desc: `ToolsHash of no tools with tool_choice auto`,
		doc: func() canon.Value {
			return map[string]canon.Value{"kind": "tools", "tools": []canon.Value{},
				"tool_choice": map[string]canon.Value{"mode": "auto", "function": nil}}
		},
		hash: func() (string, error) { return canon.ToolsHash(nil, chat.ToolChoice{Mode: chat.ToolChoiceAuto}) },
	},
	{
		name: "arguments",
		desc: `ArgumentsHash("get_weather", "{\"city\": \"Oslo\",\n \"unit\":\"c\"}", SchemaHash(goldenSchema))`,
		doc: func() canon.Value {
			return map[string]canon.Value{"kind": "arguments", "name": "get_weather",
				"arguments": "{\"city\": \"Oslo\",\n \"unit\":\"c\"}", "schema_hash": mustSchemaHash(goldenSchema)}
		},
		hash: func() (string, error) {
			return canon.ArgumentsHash("get_weather", "{\"city\": \"Oslo\",\n \"unit\":\"c\"}", mustSchemaHash(goldenSchema))
		},
	},
	{
		name: "results",
		desc: `ResultsHash of [("call_pmn_3q2+7wAAAAAAAAAAAAAAAAAAAAAAAAAA", "18°C"), ("call_pmn_Zm9vYmFyYmF6cXV4cXV1eHh4eHh4eHh4", "{\"temp\":-3}")]`,
		doc: func() canon.Value {
			return map[string]canon.Value{"kind": "results", "results": []canon.Value{
				[]canon.Value{"call_pmn_3q2+7wAAAAAAAAAAAAAAAAAAAAAAAAAA", "18°C"},
				[]canon.Value{"call_pmn_Zm9vYmFyYmF6cXV4cXV1eHh4eHh4eHh4", `{"temp":-3}`},
			}}
		},
		hash: func() (string, error) {
			return canon.ResultsHash([]canon.Result{
				{PublicID: "call_pmn_3q2+7wAAAAAAAAAAAAAAAAAAAAAAAAAA", Content: "18°C"},
				{PublicID: "call_pmn_Zm9vYmFyYmF6cXV4cXV1eHh4eHh4eHh4", Content: `{"temp":-3}`},
			})
		},
	},
	{
		name: "transcript-v2-system-user-assistant-with-tool-calls",
		desc: `TranscriptHashV2 of goldenTranscript() with no issued calls: the argument strings in value form`,
		doc: func() canon.Value {
			calls := []canon.Value{
				map[string]canon.Value{"id": "call_pmn_3q2+7wAAAAAAAAAAAAAAAAAAAAAAAAAA", "name": "get_weather", "arguments": map[string]canon.Value{"city": "Paris"}},
				map[string]canon.Value{"id": "call_pmn_Zm9vYmFyYmF6cXV4cXV1eHh4eHh4eHh4", "name": "get_weather", "arguments": map[string]canon.Value{"city": "Oslo", "unit": "c"}},
			}
			return map[string]canon.Value{"kind": "transcript.v2", "messages": []canon.Value{
				map[string]canon.Value{"role": "system", "content": "You are a helpful assistant."},
				map[string]canon.Value{"role": "user", "name": "alice", "content": "What's the weather in Paris and Oslo? <b>&</b>"},
				map[string]canon.Value{"role": "assistant", "content": nil, "tool_calls": calls},
			}}
		},
		hash: func() (string, error) { return canon.TranscriptHashV2(goldenTranscript(), nil, nil) },
	},
}

// echoSchema is the parameter schema of the tool "edit" in the echo vectors:
// replace_all defaults to false, options.encoding to "utf-8".
const echoSchema = `{"type":"object","required":["file_path","content"],"properties":{` +
	`"file_path":{"type":"string"},"content":{"type":"string"},"line":{"type":"number"},` +
	`"replace_all":{"type":"boolean","default":false},` +
	`"options":{"type":"object","properties":{"encoding":{"type":"string","default":"utf-8"}}}}}`

const echoVectorID = "call_pmn_ZWNob2VjaG9lY2hvZWNob2VjaG9lY2hv"

// echoCase is one golden case of the echo rule: the gateway issued a call of
// tool "edit" (echoSchema) with the issued argument string after the user
// message "edit it"; the client echoes it with echo (and with id or name
// changed when they are set). want is the canonical JSON of the echoed
// arguments after the rule (written with canonical number spellings), or, when
// wantText is set, the echo is kept as unparsed text.
type echoCase struct {
	name, issued, echo string
	id, toolName       string
	want               string
	wantText           bool
	match              bool
}

var echoCases = []echoCase{
	{name: "echo-same-bytes", issued: `{"content":"hi","file_path":"/a"}`, echo: `{"content":"hi","file_path":"/a"}`, want: `{"content":"hi","file_path":"/a"}`, match: true},
	{name: "echo-reordered-keys", issued: `{"content":"hi","file_path":"/a"}`, echo: `{"file_path":"/a","content":"hi"}`, want: `{"content":"hi","file_path":"/a"}`, match: true},
	{name: "echo-whitespace", issued: `{"content":"hi","file_path":"/a"}`, echo: "{ \"file_path\" : \"/a\" ,\n\t\"content\":\"hi\" }", want: `{"content":"hi","file_path":"/a"}`, match: true},
	{name: "echo-number-1-as-1.0", issued: `{"file_path":"/a","line":1}`, echo: `{"line":1.0,"file_path":"/a"}`, want: `{"file_path":"/a","line":1}`, match: true},
	{name: "echo-number-100-as-1e2", issued: `{"file_path":"/a","line":100}`, echo: `{"file_path":"/a","line":1e2}`, want: `{"file_path":"/a","line":1e2}`, match: true},
	{name: "echo-number-0-as-negative-zero", issued: `{"file_path":"/a","line":0}`, echo: `{"file_path":"/a","line":-0.0}`, want: `{"file_path":"/a","line":0}`, match: true},
	{name: "echo-number-changed-refused", issued: `{"file_path":"/a","line":1}`, echo: `{"file_path":"/a","line":1.000001}`, want: `{"file_path":"/a","line":1000001e-6}`},
	{name: "echo-default-added", issued: `{"content":"hi","file_path":"/a"}`, echo: `{"file_path":"/a","content":"hi","replace_all":false}`, want: `{"content":"hi","file_path":"/a"}`, match: true},
	{name: "echo-default-with-other-value-refused", issued: `{"content":"hi","file_path":"/a"}`, echo: `{"file_path":"/a","content":"hi","replace_all":true}`, want: `{"content":"hi","file_path":"/a","replace_all":true}`},
	{name: "echo-default-omitted-refused", issued: `{"content":"hi","file_path":"/a","replace_all":false}`, echo: `{"file_path":"/a","content":"hi"}`, want: `{"content":"hi","file_path":"/a"}`},
	{name: "echo-default-kept-when-issued", issued: `{"content":"hi","file_path":"/a","replace_all":false}`, echo: `{"replace_all":false,"file_path":"/a","content":"hi"}`, want: `{"content":"hi","file_path":"/a","replace_all":false}`, match: true},
	{name: "echo-nested-default-added", issued: `{"file_path":"/a","options":{}}`, echo: `{"file_path":"/a","options":{"encoding":"utf-8"}}`, want: `{"file_path":"/a","options":{}}`, match: true},
	{name: "echo-nested-default-with-other-value-refused", issued: `{"file_path":"/a","options":{}}`, echo: `{"file_path":"/a","options":{"encoding":"latin1"}}`, want: `{"file_path":"/a","options":{"encoding":"latin1"}}`},
	{name: "echo-unicode-escape-as-raw", issued: `{"content":"caf\u00e9","file_path":"/a"}`, echo: "{\"content\":\"caf\u00e9\",\"file_path\":\"/a\"}", want: "{\"content\":\"caf\u00e9\",\"file_path\":\"/a\"}", match: true},
	{name: "echo-raw-as-unicode-escape", issued: "{\"content\":\"\U0001F600\",\"file_path\":\"/a\"}", echo: `{"content":"\ud83d\ude00","file_path":"\/a"}`, want: "{\"content\":\"\U0001F600\",\"file_path\":\"/a\"}", match: true},
	{name: "echo-nfd-for-nfc-refused", issued: "{\"content\":\"caf\u00e9\",\"file_path\":\"/a\"}", echo: "{\"content\":\"cafe\u0301\",\"file_path\":\"/a\"}", want: "{\"content\":\"cafe\u0301\",\"file_path\":\"/a\"}"},
	{name: "echo-extra-property-without-default-refused", issued: `{"content":"hi","file_path":"/a"}`, echo: `{"content":"hi","file_path":"/a","mode":"fast"}`, want: `{"content":"hi","file_path":"/a","mode":"fast"}`},
	{name: "echo-missing-property-refused", issued: `{"content":"hi","file_path":"/a"}`, echo: `{"file_path":"/a"}`, want: `{"file_path":"/a"}`},
	{name: "echo-changed-value-refused", issued: `{"content":"hi","file_path":"/a"}`, echo: `{"content":"hi!","file_path":"/a"}`, want: `{"content":"hi!","file_path":"/a"}`},
	{name: "echo-changed-id-refused", issued: `{"content":"hi","file_path":"/a"}`, echo: `{"content":"hi","file_path":"/a","replace_all":false}`, id: "call_pmn_b3RoZXJvdGhlcm90aGVyb3RoZXJvdGhl", want: `{"content":"hi","file_path":"/a","replace_all":false}`},
	{name: "echo-changed-name-refused", issued: `{"content":"hi","file_path":"/a"}`, echo: `{"content":"hi","file_path":"/a"}`, toolName: "write", want: `{"content":"hi","file_path":"/a"}`},
	{name: "echo-as-json-string-refused", issued: `{"content":"hi","file_path":"/a"}`, echo: `"{\"content\":\"hi\",\"file_path\":\"/a\"}"`, want: `"{\"content\":\"hi\",\"file_path\":\"/a\"}"`},
	{name: "echo-not-json-refused", issued: `{"content":"hi","file_path":"/a"}`, echo: `{"content":"hi",`, wantText: true},
}

func (c echoCase) messages(id, name, args string) []chat.Message {
	return []chat.Message{
		{Role: chat.RoleUser, Content: ptr("edit it")},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: id, Name: name, Arguments: args}}},
	}
}

func (c echoCase) echoed() (id, name string) {
	id, name = echoVectorID, "edit"
	if c.id != "" {
		id = c.id
	}
	if c.toolName != "" {
		name = c.toolName
	}
	return id, name
}

func (c echoCase) chatCase() chatCase {
	id, name := c.echoed()
	desc := fmt.Sprintf("issued: edit %s id %s; echoed: %s %s id %s; both tools have echoSchema", c.issued, echoVectorID, name, c.echo, id)
	return chatCase{
		name:  c.name,
		desc:  desc,
		match: c.match,
		doc: func() canon.Value {
			call := map[string]canon.Value{"id": id, "name": name}
			if c.wantText {
				call["arguments_text"] = c.echo
			} else {
				call["arguments"] = mustParse(c.want)
			}
			return map[string]canon.Value{"kind": "transcript.v2", "messages": []canon.Value{
				map[string]canon.Value{"role": "user", "content": "edit it"},
				map[string]canon.Value{"role": "assistant", "content": nil, "tool_calls": []canon.Value{call}},
			}}
		},
		hash: func() (string, error) {
			defaults, err := canon.ToolDefaults([]chat.Tool{{Name: "edit", Parameters: []byte(echoSchema)}, {Name: "write", Parameters: []byte(echoSchema)}})
			if err != nil {
				return "", err
			}
			e, err := canon.PrepareEcho(c.messages(id, name, c.echo), defaults)
			if err != nil {
				return "", err
			}
			return e.Hash([]canon.IssuedCall{{ID: echoVectorID, Name: "edit", Arguments: c.issued}})
		},
		issued: func() (string, error) {
			return canon.TranscriptHashV2(c.messages(echoVectorID, "edit", c.issued), nil, nil)
		},
	}
}

// allChatCases are chatCases followed by the echo vectors.
func allChatCases() []chatCase {
	out := append([]chatCase(nil), chatCases...)
	for _, c := range echoCases {
		out = append(out, c.chatCase())
	}
	return out
}

// compute produces a vector from the current implementation.
func computeJSON(name, input string) vector {
	v := vector{Name: name, Input: input}
	val, err := canon.ParseJSON([]byte(input))
	if err != nil {
		v.Error = string(errs.CodeOf(err))
		return v
	}
	b, err := canon.Marshal(val)
	if err != nil {
		v.Error = string(errs.CodeOf(err))
		return v
	}
	h, err := canon.Hash(val)
	if err != nil {
		v.Error = string(errs.CodeOf(err))
		return v
	}
	v.Canonical, v.Hash = string(b), h
	return v
}

func computeNumber(name, input string) vector {
	v := vector{Name: name, Number: input}
	c, ok := canon.CanonicalNumber(input)
	if !ok {
		v.Error = string(errs.InvalidRequest)
		return v
	}
	h, err := canon.Hash(canon.Number(c))
	if err != nil {
		v.Error = string(errs.CodeOf(err))
		return v
	}
	v.Canonical, v.Hash = c, h
	return v
}

func computeChat(c chatCase) vector {
	v := vector{Name: c.name, Chat: c.desc}
	if c.issued != nil {
		ih, err := c.issued()
		if err != nil {
			v.Error = string(errs.CodeOf(err))
			return v
		}
		v.IssuedHash = ih
	}
	b, err := canon.Marshal(c.doc())
	if err != nil {
		v.Error = string(errs.CodeOf(err))
		return v
	}
	h, err := c.hash()
	if err != nil {
		v.Error = string(errs.CodeOf(err))
		return v
	}
	v.Canonical, v.Hash = string(b), h
	if c.issued != nil {
		m := h == v.IssuedHash
		v.Match = &m
	}
	return v
}

func computeAll() []vector {
	var vs []vector
	for _, c := range jsonCases {
		vs = append(vs, computeJSON(c.name, c.input))
	}
	for _, c := range numberCases {
		vs = append(vs, computeNumber(c.name, c.input))
	}
	for _, c := range allChatCases() {
		vs = append(vs, computeChat(c))
	}
	return vs
}

// goldenFile is the layout of testdata/vectors.json.
type goldenFile struct {
	Version string   `json:"version"`
	Note    string   `json:"note"`
	Vectors []vector `json:"vectors"`
}

const goldenNote = "Generated by `go test ./domain/canon -run Golden -update`. The file itself is " +
	"ASCII-only JSON: every non-ASCII character and DEL inside its strings is written as a \\u escape so " +
	"that editors cannot normalize or strip it. Decode the JSON strings to get the exact bytes; " +
	"hash = \"sha256:\" + hex(SHA-256(version + \"\\n\" + canonical)), behind the tag \"transcript.v2:\" for " +
	"value-form transcripts; an echo vector matches when its hash equals its issued_hash."

func encodeVectors(vs []vector) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(goldenFile{Version: canon.Version, Note: goldenNote, Vectors: vs}); err != nil {
		panic(err)
	}
	// Outside strings the encoder writes ASCII only, so escaping every rune
	// >= DEL is a change of spelling inside strings, never of meaning.
	var out bytes.Buffer
	for _, r := range buf.String() {
		switch {
		case r < 0x7f:
			out.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
	}
	return out.Bytes()
}

func readVectors(t *testing.T) []vector {
	t.Helper()
	is := is.New(t)
	b, err := os.ReadFile(vectorsPath)
	is.NoErr(err) // golden file present (regenerate with -update)
	var f goldenFile
	is.NoErr(json.Unmarshal(b, &f))    // golden file is JSON
	is.Equal(f.Version, canon.Version) // vectors belong to this serializer version
	return f.Vectors
}

func TestGoldenVectorsMatchTheSerializer(t *testing.T) {
	if *update {
		is := is.New(t)
		is.NoErr(os.MkdirAll(filepath.Dir(vectorsPath), 0o755))                 // testdata exists
		is.NoErr(os.WriteFile(vectorsPath, encodeVectors(computeAll()), 0o644)) // golden file written
	}
	vs := readVectors(t)
	byName := map[string]chatCase{}
	for _, c := range allChatCases() {
		byName[c.name] = c
	}
	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
		t.Run(v.Name, func(t *testing.T) {
			is := is.New(t)
			var got vector
			if v.Chat != "" {
				c, ok := byName[v.Name]
				is.True(ok) // chat vector has a builder in chatCases
				got = computeChat(c)
				is.Equal(got.Chat, v.Chat) // description matches the builder
				if c.issued != nil {
					is.Equal(got.IssuedHash, v.IssuedHash)         // same admission hash
					is.True(v.Match != nil && *v.Match == c.match) // the stored outcome is the rule's outcome
					is.Equal(*got.Match, c.match)                  // and the implementation agrees
				}
			} else if v.Number != "" {
				got = computeNumber(v.Name, v.Number)
			} else {
				got = computeJSON(v.Name, v.Input)
			}
			is.Equal(got.Error, v.Error)         // same refusal
			is.Equal(got.Canonical, v.Canonical) // same canonical bytes
			is.Equal(got.Hash, v.Hash)           // same hash
			if v.Error == "" {
				sum := sha256.Sum256([]byte(canon.Version + "\n" + v.Canonical))
				untagged := strings.TrimPrefix(v.Hash, "transcript.v2:")
				is.Equal(untagged, "sha256:"+hex.EncodeToString(sum[:])) // stored hash is SHA-256 of the version line and stored bytes
			}
		})
	}
	is := is.New(t)
	var want []string
	for _, v := range computeAll() {
		want = append(want, v.Name)
	}
	is.Equal(names, want) // the file holds exactly the cases of the code (run with -update after adding one)
}

func TestGoldenNFCAndNFDVectorsDiffer(t *testing.T) {
	is := is.New(t)
	got := map[string]vector{}
	for _, v := range readVectors(t) {
		got[v.Name] = v
	}
	nfc, nfd := got["nfc-e-acute"], got["nfd-e-acute"]
	is.Equal(nfc.Canonical, "\"\u00e9\"")  // NFC kept
	is.Equal(nfd.Canonical, "\"e\u0301\"") // NFD kept
	is.True(nfc.Hash != nfd.Hash)          // no normalization: different hashes
}
