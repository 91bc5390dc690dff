package rules

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/matryer/is"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/messages"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/chat"
)

// decodeOutputConfigFormat is OutputConfigFormat of an output_config value
// read alone.
func decodeOutputConfigFormat(outputConfig json.RawMessage) (chat.OutputFormat, error) {
	var oc wirejson.Object[messages.OutputConfig]
	if err := jsonv2.Unmarshal(outputConfig, &oc); err != nil {
		return chat.OutputFormat{}, Invalid("output_config", "must be an object.")
	}
	return OutputConfigFormat(oc)
}

// The Messages decoder (output_config.format) uses OutputConfigFormat; it
// prepares the same request option as the other two APIs.
func TestOutputConfigFormatBecomesTheOneRequestOption(t *testing.T) {
	is := is.New(t)
	f, err := decodeOutputConfigFormat(json.RawMessage(`{"effort":"low","format":{"type":"json_schema","schema":{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"string","format":"uuid"}}}}}`))
	is.NoErr(err)
	is.Equal(f.Kind, chat.OutputJSONSchema)
	is.Equal(string(f.Checked), `{"type":"object","properties":{"a":{"type":"string","format":"uuid"}}}`)

	_, err = decodeOutputConfigFormat(json.RawMessage(`{"format":{"type":"json_schema"}}`))
	var re *Refusal
	is.True(err != nil)
	is.True(errors.As(err, &re))
	is.Equal(re.Param(), "output_config.format.schema")

	_, err = decodeOutputConfigFormat(json.RawMessage(`{"format":{"type":"json_schema","schema":{"type":"string","pattern":"(?=x)"}}}`))
	is.True(errors.As(err, &re))
	is.Equal(re.Param(), "output_config.format.schema.pattern")

	f, err = decodeOutputConfigFormat(json.RawMessage(`{"effort":"high"}`))
	is.NoErr(err)
	is.True(!f.Structured())
}
