package chatapi

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// decodeTools returns what decoding returns, for every input and setting, on a
// miss and on a hit; a hit never hands out memory of another request, and a
// refusal is never remembered.
func TestDecodeToolsIsDecodingRemembered(t *testing.T) {
	is := is.New(t)
	inputs := []string{
		`[{"type":"function","function":{"name":"a","parameters":{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}}}]`,
		`[{"type":"function","function":{"name":"a","description":"d","strict":true,"parameters":{"type":"object","properties":{"when":{"type":"string","format":"date-time"}}}}},` +
			`{"type":"function","function":{"name":"b"}}]`,
		`[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"a"}}]`, // refused: a repeated name
		`[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}},{"type":"function","function":{"name":"c"}}]`,
	}
	var settings []*rules.Settings
	for _, maxTools := range []int{2, 3} {
		for _, o := range []toolschema.Options{{}, {WidenCombinators: true}, {Policy: toolschema.PolicyStrict}} {
			settings = append(settings, rules.New(rules.Settings{MaxTools: maxTools, ToolSchema: o}))
		}
	}
	for range 2 { // the second round hits
		for _, in := range inputs {
			for _, st := range settings {
				want, werr := decodeToolsOnce(st, []byte(in))
				raw := []byte(in)
				got, err := decodeTools(st, raw)
				is.Equal(fmt.Sprint(err), fmt.Sprint(werr)) // the same refusal, or none
				is.Equal(got, want)
				raw[len(raw)-3] = 'X' // the request's memory changes after decoding: the cache does not
				if len(got) > 0 {
					got[0] = chat.Tool{Name: "changed"} // nor does a request's change of its own slice
				}
				again, err := decodeTools(st, []byte(in))
				is.Equal(fmt.Sprint(err), fmt.Sprint(werr))
				is.Equal(again, want)
			}
		}
	}
}

// decodeToolsOnce is decodeTools without the memory.
func decodeToolsOnce(in *rules.Settings, raw json.RawMessage) ([]chat.Tool, error) {
	if present, err := rules.ToolsPresent(wirejson.Raw(raw)); !present {
		return nil, err
	}
	return in.NewTools(chatToolDefs(wirejson.Raw(raw)))
}
