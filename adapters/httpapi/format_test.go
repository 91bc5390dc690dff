package httpapi_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/chat"
)

// Structured output at the ingress (docs/STRUCTURED-OUTPUT.md): what is
// refused at request time, and the one request option the accepted forms
// become.

func TestStructuredOutputsThatCannotBeVerifiedAreRefusedWithTheirPath(t *testing.T) {
	checkRefusals(t, []refusal{
		{"json_schema without json_schema", withFields(`,"response_format":{"type":"json_schema"}`), 400, "invalid_request", "response_format.json_schema"},
		{"json_schema without a name", withFields(`,"response_format":{"type":"json_schema","json_schema":{"schema":{}}}`), 400, "invalid_request", "response_format.json_schema.name"},
		{"json_schema with a bad name", withFields(`,"response_format":{"type":"json_schema","json_schema":{"name":"a b","schema":{}}}`), 400, "invalid_request", "response_format.json_schema.name"},
		{"json_schema with a schema that is not an object", withFields(`,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":[]}}`), 400, "invalid_request", "response_format.json_schema.schema"},
		{"json_schema with an unverifiable format", withFields(`,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","format":"hostname"}}}`), 400, "unsupported_parameter", "response_format.json_schema.schema.format"},
		{"json_schema with a lookahead pattern", withFields(`,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"type":"string","pattern":"^(?!x)"}}}}}`), 400, "unsupported_parameter", "response_format.json_schema.schema.properties.a.pattern"},
		{"json_schema with a keyword that cannot be checked", withFields(`,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"not":{"type":"string"}}}}`), 400, "unsupported_parameter", "response_format.json_schema.schema.not"},
		{"strict json_schema with an open object", withFields(`,"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}`), 400, "invalid_request", "response_format.json_schema.schema.additionalProperties"},
		{"strict json_schema with an optional property", withFields(`,"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}}`), 400, "invalid_request", "response_format.json_schema.schema.required"},
		{"strict json_schema whose root is not an object", withFields(`,"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"type":"string"}}}`), 400, "invalid_request", "response_format.json_schema.schema.type"},
		{"json_schema with a non-boolean strict", withFields(`,"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":"yes","schema":{}}}`), 400, "invalid_request", "response_format.json_schema.strict"},
		{"an unknown response format", withFields(`,"response_format":{"type":"yaml"}`), 400, "invalid_request", "response_format.type"},
	})
}

func TestEachResponseFormatBecomesTheOneRequestOption(t *testing.T) {
	schema := `{"type":"object","properties":{"city":{"type":"string","format":"email"},"n":{"$ref":"#/$defs/N"}},"required":["city","n"],"additionalProperties":false,"$defs":{"N":{"type":"integer","minimum":1}}}`
	for _, c := range []struct {
		name, path, body string
		kind             chat.OutputKind
		checked          string
	}{
		{"chat text", "/v1/chat/completions", withFields(`,"response_format":{"type":"text"}`), chat.OutputText, ""},
		{"chat json_object", "/v1/chat/completions", withFields(`,"response_format":{"type":"json_object"}`), chat.OutputJSONObject, ""},
		{"chat json_schema", "/v1/chat/completions", withFields(`,"response_format":{"type":"json_schema","json_schema":{"name":"city","strict":true,"schema":` + schema + `}}`), chat.OutputJSONSchema,
			`{"type":"object","properties":{"city":{"type":"string","format":"email"},"n":{"type":"integer","minimum":1}},"required":["city","n"],"additionalProperties":false}`},
		{"responses text.format json_schema", "/v1/responses", `{"model":"` + model + `","input":"hi","text":{"format":{"type":"json_schema","name":"city","strict":true,"schema":` + schema + `}}}`, chat.OutputJSONSchema,
			`{"type":"object","properties":{"city":{"type":"string","format":"email"},"n":{"type":"integer","minimum":1}},"required":["city","n"],"additionalProperties":false}`},
		{"responses text.format json_object", "/v1/responses", `{"model":"` + model + `","input":"hi","text":{"format":{"type":"json_object"}}}`, chat.OutputJSONObject, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			svc := &fakeService{}
			h, _ := newServer(t, svc)
			r := chatRequest(c.body)
			r.URL.Path = c.path
			rec := serve(h, r)
			is.Equal(rec.Code, 200)
			_, req := svc.Last()
			is.Equal(req.Output.Kind, c.kind)
			is.Equal(string(req.Output.Checked), c.checked) // references inlined, format kept for the check
			if c.kind == chat.OutputJSONSchema {
				is.Equal(string(req.Output.Schema), schema) // the caller's schema byte for byte
				is.Equal(req.Output.Name, "city")
				is.True(req.Output.Strict)
			}
		})
	}
}
