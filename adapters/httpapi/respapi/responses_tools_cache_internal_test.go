package respapi

import (
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/responses"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// respToolsOf reads a tools member as the request reading does.
func respToolsOf(t *testing.T, tools string) responses.Tools {
	t.Helper()
	wr, err := responses.Decode([]byte(`{"tools":` + tools + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return wr.Tools
}

// responsesTools returns what translating returns, for every input and
// setting, on a miss and on a hit; a hit never hands out memory of another
// request, and a refusal is never remembered.
func TestResponsesToolsAreTranslationRemembered(t *testing.T) {
	is := is.New(t)
	inputs := []string{
		`[{"type":"function","name":"a","parameters":{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}}]`,
		`[{"type":"function","name":"a","description":"d","strict":true,"parameters":{"type":"object","properties":{"when":{"type":"string","format":"date-time"}}}},` +
			`{"type":"web_search"},{"type":"custom","name":"b","format":{"type":"grammar","syntax":"lark","definition":"start: \"x\""}}]`,
		`[{"type":"namespace","name":"fs","tools":[{"type":"function","name":"list"},{"type":"function","name":"read","parameters":{"type":"object"}}]}]`,
		`[{"type":"function","name":"a"},{"type":"function","name":"a"}]`, // refused: a repeated name
		`[{"type":"function","name":"a"},{"type":"function","name":"b"},{"type":"custom","name":"c"}]`,
	}
	var settings []*rules.Settings
	for _, maxTools := range []int{2, 3} {
		for _, o := range []toolschema.Options{{}, {WidenCombinators: true}, {Policy: toolschema.PolicyStrict}} {
			settings = append(settings, rules.New(rules.Settings{MaxTools: maxTools, ToolSchema: o}))
		}
	}
	for range 2 { // the second round hits
		for _, in := range inputs {
			for _, s := range settings {
				want, werr := translateRespTools(s, respToolsOf(t, in))
				tools := respToolsOf(t, in)
				var got Request
				err := responsesTools(s, tools, &got)
				is.Equal(fmt.Sprint(err), fmt.Sprint(werr)) // the same refusal, or none
				if werr != nil {
					continue
				}
				is.Equal(got.Chat.Tools, want.chat)
				is.Equal(got.tools, want.byName)
				is.Equal(got.offered, want.offered)
				is.Equal(got.dropped, want.dropped)
				tools.Raw[len(tools.Raw)-3] = 'X' // the request's memory changes after translating: the memory does not
				if len(got.Chat.Tools) > 0 {
					got.Chat.Tools[0] = chat.Tool{Name: "changed"} // nor does a request's change of its own slice
				}
				var again Request
				is.NoErr(responsesTools(s, respToolsOf(t, in), &again))
				is.Equal(again.Chat.Tools, want.chat)
				is.Equal(again.offered, want.offered)
			}
		}
	}
}

func TestResponsesToolsMemoryIsBounded(t *testing.T) {
	is := is.New(t)
	s := rules.New(rules.Settings{MaxTools: 4})
	for i := range 3 * rules.MemoEntries {
		var rr Request
		is.NoErr(responsesTools(s, respToolsOf(t, fmt.Sprintf(`[{"type":"function","name":"t%d"}]`, i)), &rr))
		is.Equal(rr.Chat.Tools[0].Name, fmt.Sprintf("t%d", i))
		entries, bytes := decodedRespTools.Size()
		is.True(entries <= rules.MemoEntries)
		is.True(bytes <= rules.MemoBytes)
	}
}
