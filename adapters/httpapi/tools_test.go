package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/httpapi"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/toolschema"
)

func TestToolDefinitionRefusalsNameTheParamPath(t *testing.T) {
	checkRefusals(t, []refusal{
		{"tools not an array", withTools(`{}`), 400, "invalid_request", "tools"},
		{"more tools than allowed", withTools(`[` + strings.TrimSuffix(strings.Repeat(`{"type":"function","function":{"name":"f"}},`, 5), ",") + `]`), 400, "unsupported_parameter", "tools"},
		{"missing type", withTools(`[{"function":{"name":"f"}}]`), 400, "invalid_request", "tools[0].type"},
		{"non-function tool", withTools(`[{"type":"function","function":{"name":"a"}},{"type":"web_search"}]`), 400, "unsupported_parameter", "tools[1].type"},
		{"missing function", withTools(`[{"type":"function"}]`), 400, "invalid_request", "tools[0].function"},
		{"missing name", withTools(`[{"type":"function","function":{}}]`), 400, "invalid_request", "tools[0].function.name"},
		{"empty name", withTools(`[{"type":"function","function":{"name":""}}]`), 400, "invalid_request", "tools[0].function.name"},
		{"name with a dot", withTools(`[{"type":"function","function":{"name":"a.b"}}]`), 400, "invalid_request", "tools[0].function.name"},
		{"name with a space", withTools(`[{"type":"function","function":{"name":"a b"}}]`), 400, "invalid_request", "tools[0].function.name"},
		{"name of 65 characters", withTools(`[{"type":"function","function":{"name":"` + strings.Repeat("a", 65) + `"}}]`), 400, "invalid_request", "tools[0].function.name"},
		{"duplicate name", withTools(`[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]`), 400, "invalid_request", "tools[1].function.name"},
		{"parameters not an object", withTools(`[{"type":"function","function":{"name":"f","parameters":"{}"}}]`), 400, "invalid_request", "tools[0].function.parameters"},
		{"strict not a boolean", withTools(`[{"type":"function","function":{"name":"f","strict":"yes"}}]`), 400, "invalid_request", "tools[0].function.strict"},
	})
}

func TestToolNamesOfTheAllowedAlphabetAreAccepted(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	long := strings.Repeat("z", 64)
	rec := post(h, withTools(`[{"type":"function","function":{"name":"get_Weather-2"}},{"type":"function","function":{"name":"`+long+`"}}]`))
	is.Equal(rec.Code, http.StatusOK) // letters, digits, _ and - up to 64 characters are accepted
	_, req := svc.Last()
	is.Equal(len(req.Tools), 2)       // both tools are passed on
	is.Equal(req.Tools[1].Name, long) // with their names
}

func TestToolsAreNormalizedWithTheirRawSchema(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	schema := `{ "type" : "object",  "properties":{"city":{"type":"string","description":"Paris \u00e9"}}, "required":["city"] }`
	rec := post(h, withFields(`,"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather.","parameters":`+schema+`,"strict":true}},{"type":"function","function":{"name":"noop"}}],"tool_choice":{"type":"function","function":{"name":"noop"}},"parallel_tool_calls":false`))
	is.Equal(rec.Code, http.StatusOK) // the tools are accepted
	_, req := svc.Last()
	is.Equal(string(req.Tools[0].Parameters), schema)                                          // the schema bytes are kept exactly as sent
	is.Equal(string(req.Tools[0].UpstreamParameters), schema)                                  // nothing to lower: the same bytes go upstream
	is.Equal(req.Tools[0].Description, "Weather.")                                             // the description is kept
	is.True(req.Tools[0].Strict != nil && *req.Tools[0].Strict)                                // strict is kept
	is.Equal(req.Tools[1].Parameters, []byte(nil))                                             // absent parameters stay nil
	is.Equal(req.Tools[1].Strict, (*bool)(nil))                                                // absent strict stays nil
	is.Equal(req.ToolChoice, chat.ToolChoice{Mode: chat.ToolChoiceFunction, Function: "noop"}) // a named function choice
	is.True(!req.ParallelToolCalls)                                                            // parallel_tool_calls=false is passed on
}

func TestToolChoiceModesAreAccepted(t *testing.T) {
	for _, mode := range []chat.ToolChoiceMode{chat.ToolChoiceAuto, chat.ToolChoiceNone, chat.ToolChoiceRequired} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			svc := &fakeService{}
			h, _ := newServer(t, svc)
			rec := post(h, withFields(`,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"`+string(mode)+`"`))
			is.Equal(rec.Code, http.StatusOK) // the mode is accepted
			_, req := svc.Last()
			is.Equal(req.ToolChoice.Mode, mode) // and passed on
		})
	}
}

func TestToolChoiceRefusalsNameTheParamPath(t *testing.T) {
	tools := `,"tools":[{"type":"function","function":{"name":"f"}}]`
	checkRefusals(t, []refusal{
		{"unknown mode", withFields(tools + `,"tool_choice":"always"`), 400, "invalid_request", "tool_choice"},
		{"required without tools", withFields(`,"tool_choice":"required"`), 400, "invalid_request", "tool_choice"},
		{"undeclared function", withFields(tools + `,"tool_choice":{"type":"function","function":{"name":"g"}}`), 400, "invalid_request", "tool_choice.function.name"},
		{"allowed_tools choice", withFields(tools + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}`), 400, "unsupported_parameter", "tool_choice.type"},
		{"numeric choice", withFields(tools + `,"tool_choice":1`), 400, "invalid_request", "tool_choice"},
	})
}

func TestNoToolsMayBeDeclaredWhenMaxToolsIsZero(t *testing.T) {
	checkRefusals(t, []refusal{
		{"one tool", withTools(`[{"type":"function","function":{"name":"f"}}]`), 400, "unsupported_parameter", "tools"},
	}, func(c *httpapi.Config) { c.MaxTools = 0 })
}

func TestEveryAllowedSchemaKeywordIsAccepted(t *testing.T) {
	allowed := map[string]string{
		"type":                 `"object"`,
		"properties":           `{"a":{"type":"string"}}`,
		"required":             `["a"]`,
		"additionalProperties": `false`,
		"items":                `{"type":"string"}`,
		"enum":                 `["x",1,null]`,
		"const":                `{"k":[1]}`,
		"anyOf":                `[{"type":"string"},{"type":"null"}]`,
		"oneOf":                `[{"type":"string"}]`,
		"allOf":                `[{"required":["a"]}]`,
		"title":                `"T"`,
		"description":          `"D"`,
		"default":              `{}`,
		"examples":             `[{}]`,
		"deprecated":           `false`,
		"readOnly":             `true`,
		"writeOnly":            `false`,
		"minimum":              `-1.5`,
		"maximum":              `10`,
		"exclusiveMinimum":     `0`,
		"exclusiveMaximum":     `1e3`,
		"multipleOf":           `0.5`,
		"minLength":            `0`,
		"maxLength":            `10`,
		"minItems":             `1`,
		"maxItems":             `2.0`,
		"uniqueItems":          `true`,
		"minProperties":        `0`,
		"maxProperties":        `3`,
		"$schema":              `"https://json-schema.org/draft/2020-12/schema"`,
		"$id":                  `"urn:x"`,
	}
	for kw, val := range allowed {
		for _, policy := range []toolschema.Policy{toolschema.PolicyLower, toolschema.PolicyStrict} {
			t.Run(kw+"/"+string(policy), func(t *testing.T) {
				t.Parallel()
				is := is.New(t)
				svc := &fakeService{}
				h, _ := newServer(t, svc, func(c *httpapi.Config) { c.ToolSchemaPolicy = policy })
				schema := `{"type":"object","properties":{"p":{"` + kw + `":` + val + `}}}`
				if kw == "type" {
					schema = `{"type":"object","properties":{"p":{"type":["string","null"]}}}`
				}
				rec := post(h, withSchema(schema))
				is.Equal(rec.Code, http.StatusOK) // the keyword belongs to the vocabulary
				is.Equal(svc.Calls(), 1)          // and the request reaches the service
				_, req := svc.Last()
				want := schema
				if kw == "$id" && policy == toolschema.PolicyLower {
					want = `{"type":"object","properties":{"p":{}}}` // a nested $id names nothing once refs are inlined
				}
				is.Equal(string(req.Tools[0].UpstreamParameters), want) // and goes upstream unchanged
			})
		}
	}
}

func strictSchemas(c *httpapi.Config) { c.ToolSchemaPolicy = toolschema.PolicyStrict }

// Under TOOL_SCHEMA_POLICY=strict every keyword outside the bounded
// vocabulary is refused, exactly as before lowering existed.
func TestStrictRefusesSchemaKeywordsWithTheirFullPath(t *testing.T) {
	p := "tools[0].function.parameters"
	checkRefusals(t, []refusal{
		{"format", withSchema(`{"type":"object","properties":{"x":{"type":"string","format":"email"}}}`), 400, "unsupported_parameter", p + ".properties.x.format"},
		{"pattern", withSchema(`{"type":"object","properties":{"x":{"type":"string","pattern":"^a"}}}`), 400, "unsupported_parameter", p + ".properties.x.pattern"},
		{"$ref", withSchema(`{"type":"object","properties":{"x":{"$ref":"#/$defs/y"}}}`), 400, "unsupported_parameter", p + ".properties.x.$ref"},
		{"$defs", withSchema(`{"type":"object","$defs":{"y":{}}}`), 400, "unsupported_parameter", p + ".$defs"},
		{"definitions", withSchema(`{"type":"object","definitions":{"y":{}}}`), 400, "unsupported_parameter", p + ".definitions"},
		{"tuple items", withSchema(`{"type":"object","properties":{"x":{"type":"array","items":[{"type":"string"}]}}}`), 400, "unsupported_parameter", p + ".properties.x.items"},
		{"prefixItems", withSchema(`{"type":"object","properties":{"x":{"type":"array","prefixItems":[{}]}}}`), 400, "unsupported_parameter", p + ".properties.x.prefixItems"},
		{"schema additionalProperties", withSchema(`{"type":"object","additionalProperties":{"type":"string"}}`), 400, "unsupported_parameter", p + ".additionalProperties"},
		{"numeric additionalProperties", withSchema(`{"type":"object","additionalProperties":1}`), 400, "unsupported_parameter", p + ".additionalProperties"},
		{"patternProperties", withSchema(`{"type":"object","patternProperties":{"^a":{}}}`), 400, "unsupported_parameter", p + ".patternProperties"},
		{"if", withSchema(`{"type":"object","if":{},"then":{}}`), 400, "unsupported_parameter", p + ".if"},
		{"then", withSchema(`{"type":"object","then":{}}`), 400, "unsupported_parameter", p + ".then"},
		{"else", withSchema(`{"type":"object","else":{}}`), 400, "unsupported_parameter", p + ".else"},
		{"not", withSchema(`{"type":"object","not":{"required":["a"]}}`), 400, "unsupported_parameter", p + ".not"},
		{"boolean subschema", withSchema(`{"type":"object","properties":{"x":true}}`), 400, "unsupported_parameter", p + ".properties.x"},
		{"draft-04 exclusiveMinimum", withSchema(`{"type":"object","properties":{"x":{"minimum":1,"exclusiveMinimum":true}}}`), 400, "unsupported_parameter", p + ".properties.x.exclusiveMinimum"},
		{"non-object root", withSchema(`{"type":"array","items":{}}`), 400, "unsupported_parameter", p + ".type"},
		{"deep in anyOf", withSchema(`{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"object","properties":{"b":{"items":{"type":"string","format":"uri"}}}}]}}}`), 400, "unsupported_parameter", p + ".properties.a.anyOf[1].properties.b.items.format"},
		{"unprintable property name", withSchema(`{"type":"object","properties":{"a b\u0000":{"pattern":"x"}}}`), 400, "unsupported_parameter", p + ".properties.?.pattern"},
		{"second tool", withTools(`[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b","parameters":{"type":"object","properties":{"x":{"format":"date"}}}}}]`), 400, "unsupported_parameter", "tools[1].function.parameters.properties.x.format"},
	}, strictSchemas)
}

// Under the default policy what cannot be lowered without changing which
// arguments are valid is still refused, with its path.
func TestLowerStillRefusesWhatItCannotLower(t *testing.T) {
	p := "tools[0].function.parameters"
	checkRefusals(t, []refusal{
		{"tuple items", withSchema(`{"type":"object","properties":{"x":{"type":"array","items":[{"type":"string"}]}}}`), 400, "unsupported_parameter", p + ".properties.x.items"},
		{"prefixItems", withSchema(`{"type":"object","properties":{"x":{"type":"array","prefixItems":[{}]}}}`), 400, "unsupported_parameter", p + ".properties.x.prefixItems"},
		{"numeric additionalProperties", withSchema(`{"type":"object","additionalProperties":1}`), 400, "unsupported_parameter", p + ".additionalProperties"},
		{"patternProperties", withSchema(`{"type":"object","patternProperties":{"^a":{}}}`), 400, "unsupported_parameter", p + ".patternProperties"},
		{"if", withSchema(`{"type":"object","if":{},"then":{}}`), 400, "unsupported_parameter", p + ".if"},
		{"not", withSchema(`{"type":"object","not":{"required":["a"]}}`), 400, "unsupported_parameter", p + ".not"},
		{"boolean subschema", withSchema(`{"type":"object","properties":{"x":true}}`), 400, "unsupported_parameter", p + ".properties.x"},
		{"draft-04 exclusiveMinimum", withSchema(`{"type":"object","properties":{"x":{"minimum":1,"exclusiveMinimum":true}}}`), 400, "unsupported_parameter", p + ".properties.x.exclusiveMinimum"},
		{"non-object root", withSchema(`{"type":"array","items":{}}`), 400, "unsupported_parameter", p + ".type"},
		{"dangling $ref", withSchema(`{"type":"object","properties":{"x":{"$ref":"#/$defs/y"}}}`), 400, "invalid_request", p + ".properties.x.$ref"},
		{"remote $ref", withSchema(`{"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}}`), 400, "unsupported_parameter", p + ".properties.x.$ref"},
		{"recursive $ref", withSchema(`{"type":"object","properties":{"n":{"$ref":"#/$defs/N"}},"$defs":{"N":{"type":"object","properties":{"next":{"$ref":"#/$defs/N"}}}}}`), 400, "unsupported_parameter", p + ".$defs.N.properties.next.$ref"},
		{"unknown keyword", withSchema(`{"type":"object","nullable":true}`), 400, "unsupported_parameter", p + ".nullable"},
		{"deep in anyOf", withSchema(`{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"object","properties":{"b":{"items":{"type":"string","not":{}}}}}]}}}`), 400, "unsupported_parameter", p + ".properties.a.anyOf[1].properties.b.items.not"},
		{"second tool", withTools(`[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b","parameters":{"type":"object","properties":{"x":{"dependentRequired":{}}}}}}]`), 400, "unsupported_parameter", "tools[1].function.parameters.properties.x.dependentRequired"},
	})
}

// Under the default policy the caller's bytes are kept for the tools hash and
// the lowered schema is what goes upstream.
func TestLowerKeepsTheOriginalAndPassesTheLoweredSchema(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	schema := `{"type":"object","properties":{"url":{"type":"string","format":"uri"},"id":{"type":"string","pattern":"^[a-z]+$","description":"Run id"}},"required":["url"]}`
	rec := post(h, withSchema(schema))
	is.Equal(rec.Code, http.StatusOK) // format and pattern no longer refuse the request
	_, req := svc.Last()
	is.Equal(string(req.Tools[0].Parameters), schema) // the caller's bytes, for the tools hash
	is.Equal(string(req.Tools[0].UpstreamParameters),
		`{"type":"object","properties":{"url":{"type":"string","description":"Schema notes: format: uri"},"id":{"type":"string","description":"Run id\nSchema notes: pattern: ^[a-z]+$"}},"required":["url"]}`) // lowered for upstream
}

func TestMalformedSchemaValuesAreInvalid(t *testing.T) {
	p := "tools[0].function.parameters"
	checkRefusals(t, []refusal{
		{"unknown type", withSchema(`{"type":"object","properties":{"x":{"type":"text"}}}`), 400, "invalid_request", p + ".properties.x.type"},
		{"required not strings", withSchema(`{"type":"object","required":[1]}`), 400, "invalid_request", p + ".required"},
		{"negative minLength", withSchema(`{"type":"object","properties":{"x":{"minLength":-1}}}`), 400, "invalid_request", p + ".properties.x.minLength"},
		{"zero multipleOf", withSchema(`{"type":"object","properties":{"x":{"multipleOf":0}}}`), 400, "invalid_request", p + ".properties.x.multipleOf"},
		{"empty anyOf", withSchema(`{"type":"object","anyOf":[]}`), 400, "invalid_request", p + ".anyOf"},
		{"enum not an array", withSchema(`{"type":"object","properties":{"x":{"enum":"a"}}}`), 400, "invalid_request", p + ".properties.x.enum"},
		{"properties not an object", withSchema(`{"type":"object","properties":[]}`), 400, "invalid_request", p + ".properties"},
	})
}

// nested returns an object schema with n levels of properties below the root.
func nested(n int) string {
	return `{"type":"object","properties":` + strings.Repeat(`{"a":{"type":"object","properties":`, n) + `{}` + strings.Repeat(`}}`, n) + `}`
}

func TestSchemaNestingIsBoundedAt32Levels(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	svc := &fakeService{}
	h, _ := newServer(t, svc)
	is.Equal(post(h, withSchema(nested(32))).Code, http.StatusOK) // 32 levels are accepted
	rec := post(h, withSchema(nested(33)))
	e := decodeError(t, rec.Body.Bytes())
	is.Equal(rec.Code, http.StatusBadRequest)   // 33 levels are refused
	is.Equal(e.Code, "unsupported_parameter")   // as a schema the gateway cannot honour
	is.True(strings.HasSuffix(e.param(), ".a")) // at the level that is too deep
	is.Equal(svc.Calls(), 1)                    // only the accepted request reached the service
}

// Arguments the upstream produced against the lowered schema are an upstream
// fault; the client learns which call and path, never the value.
func TestInvalidUpstreamArgumentsNameTheCallAndPath(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	fault := errs.Wrap(&toolschema.ArgumentsError{Call: 1, Path: ".city", Keyword: "type"}, errs.UpstreamMalformedEvent)
	h, _ := newServer(t, returning(nil, fault))
	rec := post(h, withFields(""))
	e := decodeError(t, rec.Body.Bytes())
	is.Equal(rec.Code, http.StatusBadGateway)    // an upstream fault
	is.Equal(e.Code, "upstream_malformed_event") // with a stable code
	is.Equal(e.Message, "The upstream sent a malformed event. tool_calls[1].function.arguments.city: does not match the tool's schema (type).")
	is.Equal(e.param(), "<null>") // no request parameter is at fault
}
