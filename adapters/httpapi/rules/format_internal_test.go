package rules

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/chat"
)

// The Messages decoder (output_config.format) uses decodeOutputConfigFormat;
// it prepares the same request option as the other two APIs.
func TestOutputConfigFormatBecomesTheOneRequestOption(t *testing.T) {
	is := is.New(t)
	f, err := DecodeOutputConfigFormat(json.RawMessage(`{"effort":"low","format":{"type":"json_schema","schema":{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"string","format":"uuid"}}}}}`))
	is.NoErr(err)
	is.Equal(f.Kind, chat.OutputJSONSchema)
	is.Equal(string(f.Checked), `{"type":"object","properties":{"a":{"type":"string","format":"uuid"}}}`)

	_, err = DecodeOutputConfigFormat(json.RawMessage(`{"format":{"type":"json_schema"}}`))
	var re *Refusal
	is.True(err != nil)
	is.True(errors.As(err, &re))
	is.Equal(re.Param(), "output_config.format.schema")

	_, err = DecodeOutputConfigFormat(json.RawMessage(`{"format":{"type":"json_schema","schema":{"type":"string","pattern":"(?=x)"}}}`))
	is.True(errors.As(err, &re))
	is.Equal(re.Param(), "output_config.format.schema.pattern")

	f, err = DecodeOutputConfigFormat(json.RawMessage(`{"effort":"high"}`))
	is.NoErr(err)
	is.True(!f.Structured())
}
