package rules

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// lowerSchema returns what toolschema.Lower returns, for every input, on a
// miss and on a hit; a different option, path or schema is never served
// another's result.
func TestLowerSchemaIsLowerRemembered(t *testing.T) {
	is := is.New(t)
	schemas := []string{
		`{"type":"object","properties":{"city":{"type":"string"}}}`,
		`{"type":"object","properties":{"city":{"type":"string"}} }`,
		`{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`,
		`{"type":"object","properties":{"when":{"type":"string","format":"date-time"}}}`,
	}
	options := []toolschema.Options{{}, {WidenCombinators: true}, {Policy: toolschema.DefaultPolicy}}
	for range 2 { // the second round hits
		for _, s := range schemas {
			for _, o := range options {
				for _, path := range []string{"tools[0].function.parameters", "tools[1].function.parameters"} {
					raw := []byte(s)
					want, werr := toolschema.Lower([]byte(s), path, o)
					got, err := LowerSchema(raw, path, o)
					is.Equal(err, werr)
					is.Equal(string(got), string(want))
					raw[0] = 'X' // the request's memory changes after decoding: the cache does not
					again, err := LowerSchema([]byte(s), path, o)
					is.NoErr(err)
					is.Equal(string(again), string(want))
				}
			}
		}
	}
	// A refusal is not kept, and names its own path every time.
	bad := []byte(`{"type":"object","properties":{"a":{"type":"string"}},"properties":{}}`)
	for _, path := range []string{"tools[0].function.parameters", "tools[3].function.parameters"} {
		_, werr := toolschema.Lower(bad, path, toolschema.Options{})
		_, err := LowerSchema(bad, path, toolschema.Options{})
		is.True(err != nil)
		is.Equal(err.Error(), werr.Error())
	}
}

func TestLowerSchemaCacheIsBounded(t *testing.T) {
	is := is.New(t)
	for i := range 3 * MemoEntries {
		raw := fmt.Appendf(nil, `{"type":"object","properties":{"p%d":{"type":"string"}}}`, i)
		out, err := LowerSchema(raw, "tools[0].function.parameters", toolschema.Options{})
		is.NoErr(err)
		is.True(bytes.Contains(out, fmt.Appendf(nil, `"p%d"`, i)))
		lowerings.Lock()
		is.True(lowerings.entries <= MemoEntries)
		is.True(lowerings.bytes <= MemoBytes)
		lowerings.Unlock()
	}
}

func TestToolSetMemoryIsBounded(t *testing.T) {
	is := is.New(t)
	st := New(Settings{MaxTools: 4})
	for i := range 3 * MemoEntries {
		raw := fmt.Appendf(nil, `[{"type":"function","function":{"name":"t%d"}}]`, i)
		name := fmt.Sprintf("t%d", i)
		tools, err := st.ToolSet("", wirejson.Raw(raw), func() ([]ToolDef, error) {
			return []ToolDef{{At: "tools[0].function", Name: name, NameOK: true}}, nil
		})
		is.NoErr(err)
		is.Equal(tools[0].Name, name)
		entries, held := decodedTools.Size()
		is.True(entries <= MemoEntries)
		is.True(held <= MemoBytes)
	}
}
