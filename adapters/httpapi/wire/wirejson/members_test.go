package wirejson_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/chat"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/gemini"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/messages"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/responses"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
)

// The types that read themselves member by member (wirejson.Struct) must
// read every body as json reads the same struct by its tags: the same value,
// or an error where it has one, a repeated name found at the same path.
// Each is compared with a copy of its type that has no method (json reads it
// by its tags; the members below it read themselves either way, and are
// compared on their own).
type (
	plainTextPart             wirejson.TextPart
	plainChatRequest          chat.Request
	plainChatMessage          chat.Message
	plainChatToolCall         chat.ToolCall
	plainChatFunctionCall     chat.FunctionCall
	plainChatTool             chat.Tool
	plainChatFunctionDef      chat.FunctionDef
	plainResponsesRequest     responses.Request
	plainResponsesItem        responses.Item
	plainResponsesTool        responses.Tool
	plainMessagesRequest      messages.Request
	plainMessagesMessage      messages.Message
	plainMessagesBlock        messages.Block
	plainMessagesTool         messages.Tool
	plainGeminiRequest        gemini.Request
	plainGeminiContent        gemini.Content
	plainGeminiPart           gemini.Part
	plainGeminiFunctionCall   gemini.FunctionCall
	plainGeminiFunctionResp   gemini.FunctionResponse
	plainGeminiTool           gemini.Tool
	plainGeminiFunctionDecl   gemini.FunctionDeclaration
	plainGeminiGenerateConfig gemini.GenConfig
	plainChatStreamOptions    chat.StreamOptions
	plainChatToolChoiceFunc   chat.ToolChoiceFunction
	plainChatNamed            chat.Named
	plainChatResponseFormat   chat.ResponseFormat
	plainChatJSONSchema       chat.JSONSchema
	plainResponsesReasoning   responses.Reasoning
	plainResponsesText        responses.Text
	plainResponsesTextFormat  responses.TextFormat
	plainResponsesCustomFmt   responses.CustomFormat
	plainResponsesToolChoice  responses.ToolChoiceObject
	plainMessagesToolChoice   messages.ToolChoice
	plainMessagesThinking     messages.Thinking
	plainMessagesOutputConfig messages.OutputConfig
	plainMessagesFormat       messages.Format
	plainGeminiToolConfig     gemini.ToolConfig
	plainGeminiCallingConfig  gemini.FunctionCallingConfig
	plainGeminiThinkingConfig gemini.ThinkingConfig
)

// walked is one type that reads itself, beside its plain copy.
type walked struct {
	name    string
	names   []string // its members' names, from its tags
	hand    func(body []byte, part bool) (any, error)
	generic func(body []byte, part bool) (any, error)
}

func walkedPair[T, P any]() walked {
	read := func(body []byte, v any, part bool) error {
		if part {
			return wirejson.DecodePart(body, v)
		}
		return wirejson.Decode(body, v)
	}
	var names []string
	for f := range reflect.TypeFor[P]().Fields() {
		if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n != "" {
			names = append(names, n)
		}
	}
	return walked{
		name:  reflect.TypeFor[T]().String(),
		names: names,
		hand: func(body []byte, part bool) (any, error) {
			var v T
			err := read(body, &v, part)
			return v, err
		},
		generic: func(body []byte, part bool) (any, error) {
			var v P
			err := read(body, &v, part)
			return reflect.ValueOf(v).Convert(reflect.TypeFor[T]()).Interface(), err
		},
	}
}

var walkedTypes = []walked{
	walkedPair[wirejson.TextPart, plainTextPart](),
	walkedPair[chat.Request, plainChatRequest](),
	walkedPair[chat.Message, plainChatMessage](),
	walkedPair[chat.ToolCall, plainChatToolCall](),
	walkedPair[chat.FunctionCall, plainChatFunctionCall](),
	walkedPair[chat.Tool, plainChatTool](),
	walkedPair[chat.FunctionDef, plainChatFunctionDef](),
	walkedPair[responses.Request, plainResponsesRequest](),
	walkedPair[responses.Item, plainResponsesItem](),
	walkedPair[responses.Tool, plainResponsesTool](),
	walkedPair[messages.Request, plainMessagesRequest](),
	walkedPair[messages.Message, plainMessagesMessage](),
	walkedPair[messages.Block, plainMessagesBlock](),
	walkedPair[messages.Tool, plainMessagesTool](),
	walkedPair[gemini.Request, plainGeminiRequest](),
	walkedPair[gemini.Content, plainGeminiContent](),
	walkedPair[gemini.Part, plainGeminiPart](),
	walkedPair[gemini.FunctionCall, plainGeminiFunctionCall](),
	walkedPair[gemini.FunctionResponse, plainGeminiFunctionResp](),
	walkedPair[gemini.Tool, plainGeminiTool](),
	walkedPair[gemini.FunctionDeclaration, plainGeminiFunctionDecl](),
	walkedPair[gemini.GenConfig, plainGeminiGenerateConfig](),
	walkedPair[chat.StreamOptions, plainChatStreamOptions](),
	walkedPair[chat.ToolChoiceFunction, plainChatToolChoiceFunc](),
	walkedPair[chat.Named, plainChatNamed](),
	walkedPair[chat.ResponseFormat, plainChatResponseFormat](),
	walkedPair[chat.JSONSchema, plainChatJSONSchema](),
	walkedPair[responses.Reasoning, plainResponsesReasoning](),
	walkedPair[responses.Text, plainResponsesText](),
	walkedPair[responses.TextFormat, plainResponsesTextFormat](),
	walkedPair[responses.CustomFormat, plainResponsesCustomFmt](),
	walkedPair[responses.ToolChoiceObject, plainResponsesToolChoice](),
	walkedPair[messages.ToolChoice, plainMessagesToolChoice](),
	walkedPair[messages.Thinking, plainMessagesThinking](),
	walkedPair[messages.OutputConfig, plainMessagesOutputConfig](),
	walkedPair[messages.Format, plainMessagesFormat](),
	walkedPair[gemini.ToolConfig, plainGeminiToolConfig](),
	walkedPair[gemini.FunctionCallingConfig, plainGeminiCallingConfig](),
	walkedPair[gemini.ThinkingConfig, plainGeminiThinkingConfig](),
}

// allNames is every walked type's member names, and names none has (a case
// variant, an empty one, one not ASCII), so that a value nested anywhere may
// be read by any of them.
func allNames() []string {
	names := []string{"Model", "zz", "", "é", "Type"}
	for _, w := range walkedTypes {
		names = append(names, w.names...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// quoted writes name as a JSON string, its first letter sometimes escaped
// (a name matches by its text, not its spelling).
func quoted(t *rapid.T, name string) string {
	if name != "" && name[0] < 0x80 && rapid.IntRange(0, 5).Draw(t, "escape") == 0 {
		return `"\u00` + strings.ToLower(string("0123456789abcdef"[name[0]>>4])+string("0123456789abcdef"[name[0]&15])) + name[1:] + `"`
	}
	return `"` + name + `"`
}

var (
	leaves = []string{`null`, `true`, `false`, `0`, `-1.5e3`, `1e400`, `""`, `"text"`, `"a\"b\\c\n"`,
		`"\u00e9"`, `"é"`, `"\ud83d\ude00"`, `"{\"path\":\"/x\"}"`}
	invalid = []string{`"\ud800"`, "\"\xff\"", `"\udc00x"`} // not valid UTF-8: an error wherever they are
)

// value writes a JSON value: a leaf, or an object whose members are named
// from names (repeats included) or an array, down to depth.
func value(t *rapid.T, names []string, depth int) string {
	kind := rapid.IntRange(0, 9).Draw(t, "kind")
	switch {
	case depth > 0 && kind < 3:
		return object(t, names, names, depth-1)
	case depth > 0 && kind < 5:
		var items []string
		for range rapid.IntRange(0, 3).Draw(t, "items") {
			items = append(items, value(t, names, depth-1))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	if rapid.IntRange(0, 40).Draw(t, "invalid") == 0 {
		return rapid.SampledFrom(invalid).Draw(t, "invalid leaf")
	}
	return rapid.SampledFrom(leaves).Draw(t, "leaf")
}

// object writes an object with members named mostly from own, else from
// names (all of them), whitespace sometimes around its tokens; a name is
// sometimes repeated.
func object(t *rapid.T, own, names []string, depth int) string {
	space := rapid.SampledFrom([]string{"", " ", "\n\t"}).Draw(t, "space")
	var members []string
	seen := map[string]bool{}
	for range rapid.IntRange(0, 5).Draw(t, "members") {
		name := rapid.SampledFrom(names).Draw(t, "name")
		if len(own) > 0 && rapid.IntRange(0, 3).Draw(t, "own") > 0 {
			name = rapid.SampledFrom(own).Draw(t, "own name")
		}
		if seen[name] && rapid.IntRange(0, 5).Draw(t, "repeat") > 0 {
			continue
		}
		seen[name] = true
		members = append(members, quoted(t, name)+space+":"+space+value(t, names, depth))
	}
	return "{" + space + strings.Join(members, ","+space) + space + "}"
}

func TestMembersReadAsJSONReadsTheStruct(t *testing.T) {
	names := allNames()
	outcomes := map[bool]int{}
	defer func() { t.Logf("read %d, refused %d", outcomes[true], outcomes[false]) }()
	rapid.Check(t, func(t *rapid.T) {
		for _, w := range walkedTypes {
			body := []byte(object(t, w.names, names, 3))
			if rapid.IntRange(0, 9).Draw(t, "not an object") == 0 {
				body = []byte(value(t, names, 2)) // null, or another kind
			}
			for _, part := range []bool{false, true} {
				hv, herr := w.hand(body, part)
				outcomes[herr == nil]++
				gv, gerr := w.generic(body, part)
				if (herr == nil) != (gerr == nil) {
					t.Fatalf("%s, part %v: %s\nerror %v, json's %v", w.name, part, body, herr, gerr)
				}
				if herr == nil && !reflect.DeepEqual(hv, gv) {
					t.Fatalf("%s, part %v: %s\nread as\n%+v\njson reads\n%+v", w.name, part, body, hv, gv)
				}
				hs, hok := wirejson.DuplicateName(body, herr)
				gs, gok := wirejson.DuplicateName(body, gerr)
				if hok != gok || !reflect.DeepEqual(hs, gs) {
					t.Fatalf("%s, part %v: %s\nrepeat at %v (%v), json's at %v (%v)", w.name, part, body, hs, herr, gs, gerr)
				}
			}
		}
	})
}

// The cases the generator must reach, written out: a repeated name (known,
// unknown, escaped), a wrong kind, null, an unknown member nested deep,
// text that is not UTF-8 in a name, a value or a skipped member.
func TestMembersReadTheEdgeCasesAsJSONDoes(t *testing.T) {
	is := is.New(t)
	for _, body := range []string{
		`{"role":"user","role":"user"}`,
		`{"role":"user","\u0072ole":"x"}`,
		`{"zz":1,"zz":2}`,
		`{"messages":[{"role":"a"},{"content":[{"type":"text","text":"x","text":"y"}]}]}`,
		`{"model":5,"messages":{},"stream":"yes","tools":{},"temperature":[1,{"a":{"b":{"c":null}}}]}`,
		`{"model":null,"input":null,"contents":null,"content":null,"parts":null}`,
		`{"x":{"y":[{"z":"\ud800"}]}}`,
		`{"role":"\ud800"}`,
		"{\"\xff\":1}",
		`{"functionCall":{"name":"f","args":{"a":1,"a":2}}}`,
		`{"inlineData":{"mimeType":"x"},"fileData":1,"inlineData":2}`,
		`null`, `[]`, `"x"`, `{"a":1}{}`, `{"a":1} x`, `{"a":`,
	} {
		for _, w := range walkedTypes {
			for _, part := range []bool{false, true} {
				hv, herr := w.hand([]byte(body), part)
				gv, gerr := w.generic([]byte(body), part)
				is.Equal(herr == nil, gerr == nil) // same verdict
				if herr == nil {
					is.Equal(hv, gv) // same value
				}
				hs, _ := wirejson.DuplicateName([]byte(body), herr)
				gs, _ := wirejson.DuplicateName([]byte(body), gerr)
				is.Equal(hs, gs) // same repeat
			}
		}
	}
}

// A repeated name is refused at its path, escaped or not; under DecodePart
// the last one wins, as json reads it.
func TestMembersRefuseARepeatAtItsPath(t *testing.T) {
	is := is.New(t)
	body := []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","t\u0065xt":"a","text":"b"}]}]}`)
	_, err := chat.Decode(body)
	steps, ok := wirejson.DuplicateName(body, err)
	is.True(ok)
	is.Equal(steps, []wirejson.Step{{Name: "messages"}, {Name: "0", Index: true}, {Name: "content"}, {Name: "0", Index: true}, {Name: "text"}})
	var m chat.Message
	is.NoErr(wirejson.DecodePart([]byte(`{"role":"a","role":"b","zz":1,"zz":2}`), &m))
	is.Equal(m.Role.V, "b")
	var r chat.Request
	is.NoErr(wirejson.DecodePart([]byte(`{"temperature":1,"temperature":[2]}`), &r))
	is.Equal(string(r.Fields["temperature"].Raw), "[2]")
	var p gemini.Part
	is.NoErr(wirejson.DecodePart([]byte(`{"inlineData":{"a":1},"inlineData":"x"}`), &p))
	is.Equal(p.Unknown["inlineData"], jsontext.Value(`"x"`))
}

// Every struct type of the wire packages that reads itself is compared
// above: one added later is found here by its source.
func TestEveryWalkIsCompared(t *testing.T) {
	is := is.New(t)
	compared := map[string]bool{}
	for _, w := range walkedTypes {
		compared[w.name] = true
	}
	for _, file := range []string{"../chat/chat.go", "../responses/responses.go", "../messages/messages.go", "../gemini/gemini.go", "wirejson.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		is.NoErr(err)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "UnmarshalJSONFrom" || !callsStruct(fn) {
				continue
			}
			recv := fn.Recv.List[0].Type.(*ast.StarExpr).X.(*ast.Ident).Name
			name := f.Name.Name + "." + recv
			if !compared[name] {
				t.Errorf("%s reads itself with wirejson.Struct but is not in walkedTypes", name)
			}
		}
	}
}

// callsStruct says whether fn's body calls Struct (wirejson.Struct, or
// Struct in wirejson itself).
func callsStruct(fn *ast.FuncDecl) bool {
	found := false
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch c := n.(type) {
		case *ast.SelectorExpr:
			found = found || c.Sel.Name == "Struct"
		case *ast.Ident:
			found = found || c.Name == "Struct"
		}
		return !found
	})
	return found
}
