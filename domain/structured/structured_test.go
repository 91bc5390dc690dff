package structured_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/structured"
	"github.com/pmgate/pmgate/domain/toolschema"
)

func prepare(t *testing.T, schema string, strict bool) chat.OutputFormat {
	t.Helper()
	f, err := structured.Prepare(structured.Spec{Kind: chat.OutputJSONSchema, Name: "weather_report", Schema: []byte(schema), Strict: strict,
		NamePath: "response_format.json_schema.name", SchemaPath: "response_format.json_schema.schema"})
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	return f
}

// refusal runs Check and returns the public detail of its refusal.
func refusal(t *testing.T, f chat.OutputFormat, answer string) string {
	t.Helper()
	_, err := structured.Check(f, answer)
	if !errs.Has(err, errs.UpstreamOutputInvalid) {
		t.Fatalf("Check(%q) = %v, want upstream_output_invalid", answer, err)
	}
	var ae *structured.AnswerError
	if !errors.As(err, &ae) {
		t.Fatalf("no AnswerError in %v", err)
	}
	return ae.PublicDetail()
}

const city = `{"type":"object","properties":{"city":{"type":"string","minLength":2},"temp":{"type":"number"},"tags":{"type":"array","items":{"type":"string","pattern":"^[a-z]+$"}}},"required":["city","temp"],"additionalProperties":false}`

func TestAValidAnswerIsShownAsExactlyItsJSONText(t *testing.T) {
	is := is.New(t)
	f := prepare(t, city, false)
	got, err := structured.Check(f, "\n  {\"city\":\"Oslo\",\"temp\":-3.5,\"tags\":[\"cold\"]}\n")
	is.NoErr(err)
	is.Equal(got, `{"city":"Oslo","temp":-3.5,"tags":["cold"]}`) // surrounding white space removed, nothing else changed
}

func TestASchemaViolationNamesTheFirstFailingPathNeverTheValue(t *testing.T) {
	is := is.New(t)
	f := prepare(t, city, false)
	for answer, want := range map[string]string{
		`{"city":"Oslo"}`:                                 "answer.temp: does not match the response schema (required).",
		`{"city":"O","temp":1}`:                           "answer.city: does not match the response schema (minLength).",
		`{"city":"Oslo","temp":"warm"}`:                   "answer.temp: does not match the response schema (type).",
		`{"city":"Oslo","temp":1,"wind":3}`:               "answer.wind: does not match the response schema (additionalProperties).",
		`{"city":"Oslo","temp":1,"tags":["ok","SECRET"]}`: "answer.tags[1]: does not match the response schema (pattern).",
		`["Oslo"]`: "answer: does not match the response schema (type).",
	} {
		got := refusal(t, f, answer)
		is.Equal(got, want)
		is.True(!strings.Contains(got, "SECRET") && !strings.Contains(got, "warm"))
	}
}

func TestTextThatIsNotOneJSONValueIsRefusedWithItsReason(t *testing.T) {
	is := is.New(t)
	f := prepare(t, city, false)
	for answer, want := range map[string]string{
		`{"city":"Oslo","temp":1`:                          structured.ReasonNotJSON + ".",
		`{"city":"Oslo","temp":1} and more`:                structured.ReasonNotJSON + ".",
		`{"city":"Oslo","temp":1}{"city":"Oslo","temp":1}`: structured.ReasonNotJSON + ".",
		`{"city":"Oslo","city":"Rome","temp":1}`:           structured.ReasonNotJSON + ".", // a repeated key: which one counts is unknowable
		"Here it is: {\"city\":\"Oslo\",\"temp\":1}":       structured.ReasonProse + ".",
		"I'm sorry, I can't help with that.":               structured.ReasonRefusal + ".",
		"nothing to say":                                   structured.ReasonRefusal + ".",
		"":                                                 structured.ReasonRefusal + ".",
		"```json\n{\"city\":\"Oslo\",\"temp\":1}\n```":     structured.ReasonCodeFence + ".",
		"```\n{\"city\":\"Oslo\",\"temp\":1}\n```":         structured.ReasonCodeFence + ".", // a fence without a language tag is a fence, not prose
	} {
		is.Equal(refusal(t, f, answer), want)
	}
}

func TestJSONObjectAcceptsAnyObjectAndNothingElse(t *testing.T) {
	is := is.New(t)
	f := chat.OutputFormat{Kind: chat.OutputJSONObject}
	got, err := structured.Check(f, `{"a":[1,{"b":null}]}`)
	is.NoErr(err)
	is.Equal(got, `{"a":[1,{"b":null}]}`)
	is.Equal(refusal(t, f, `[1]`), "answer: "+structured.ReasonNotAnObject+" (type).")
	is.Equal(refusal(t, f, `"text"`), "answer: "+structured.ReasonNotAnObject+" (type).")
}

func TestAJSONSchemaWithoutASchemaAcceptsAnyJSONValue(t *testing.T) {
	is := is.New(t)
	f, err := structured.Prepare(structured.Spec{Kind: chat.OutputJSONSchema, Name: "x"})
	is.NoErr(err)
	got, err := structured.Check(f, ` "just a string" `)
	is.NoErr(err)
	is.Equal(got, `"just a string"`)
	is.Equal(structured.Instruction(f), structured.InstructionValue)
}

func TestFormatsArePartOfTheContract(t *testing.T) {
	is := is.New(t)
	for format, cases := range map[string]struct{ good, bad string }{
		"email":     {"ada@example.com", "Ada <ada@example.com>"},
		"uri":       {"https://example.com/a?b=c", "/relative/path"},
		"uuid":      {"123e4567-e89b-12d3-a456-426614174000", "123e4567e89b12d3a456426614174000"},
		"date":      {"2024-02-29", "2023-02-29"},
		"date-time": {"2024-02-29T12:00:00.5+01:00", "2024-02-29 12:00:00"},
		"ipv4":      {"192.0.2.1", "192.000.2.1"},
		"ipv6":      {"2001:db8::1", "fe80::1%eth0"},
	} {
		f := prepare(t, `{"type":"string","format":"`+format+`"}`, false)
		_, err := structured.Check(f, `"`+cases.good+`"`)
		is.NoErr(err)
		is.Equal(refusal(t, f, `"`+cases.bad+`"`), "answer: does not match the response schema (format).")
	}
}

func TestReferencesAreInlinedAndRecordsAndPropertyNamesAreChecked(t *testing.T) {
	is := is.New(t)
	f := prepare(t, `{"type":"object","properties":{"p":{"$ref":"#/$defs/P"},"m":{"type":"object","propertyNames":{"pattern":"^[a-z]+$"},"additionalProperties":{"type":"integer"}}},"$defs":{"P":{"type":"string","enum":["a","b"]}}}`, false)
	_, err := structured.Check(f, `{"p":"a","m":{"x":1}}`)
	is.NoErr(err)
	is.Equal(refusal(t, f, `{"p":"c"}`), "answer.p: does not match the response schema (enum).")
	is.Equal(refusal(t, f, `{"m":{"x":"1"}}`), "answer.m.x: does not match the response schema (type).")
	is.Equal(refusal(t, f, `{"m":{"X":1}}`), "answer.m.X: does not match the response schema (propertyNames).")
}

func TestWhatCannotBeVerifiedIsRefusedAtRequestTime(t *testing.T) {
	is := is.New(t)
	for schema, path := range map[string]string{
		`{"type":"string","format":"hostname"}`: "s.format",
		`{"type":"string","pattern":"^(?=a)"}`:  "s.pattern",
		`{"type":"string","pattern":"(a)\\1"}`:  "s.pattern",
		`{"type":"string","pattern":"\\p{L}"}`:  "s.pattern",
		`{"not":{"type":"string"}}`:             "s.not",
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"$ref":"#/$defs/A"}}}`: "s.$defs.A.$ref",
		`{"type":"array","prefixItems":[{"type":"string"}]}`:                                           "s.prefixItems",
	} {
		_, err := structured.Prepare(structured.Spec{Kind: chat.OutputJSONSchema, Name: "x", Schema: []byte(schema), SchemaPath: "s"})
		var pr *toolschema.Problem
		is.True(errors.As(err, &pr))
		is.Equal(pr.Code, errs.UnsupportedParameter)
		is.Equal(pr.Path, path)
	}
}

func TestStrictRequiresWhatOpenAIStrictModeRequires(t *testing.T) {
	is := is.New(t)
	prepare(t, `{"type":"object","properties":{"a":{"type":["string","null"]},"b":{"type":"object","properties":{"c":{"type":"integer"}},"required":["c"],"additionalProperties":false}},"required":["a","b"],"additionalProperties":false}`, true)
	for schema, path := range map[string]string{
		`{"type":"string"}`: "s.type",
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`:                                                                                                              "s.additionalProperties",
		`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`:                                                                                                  "s.required",
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":true}`:                                                                                  "s.additionalProperties",
		`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"c":{"type":"integer"}},"required":["c"]}}},"required":["l"],"additionalProperties":false}`: "s.properties.l.items.additionalProperties",
		`{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"integer"}},"additionalProperties":false}},"required":["b"],"additionalProperties":false}`:              "s.properties.b.required",
	} {
		_, err := structured.Prepare(structured.Spec{Kind: chat.OutputJSONSchema, Name: "x", Schema: []byte(schema), Strict: true, SchemaPath: "s"})
		var pr *toolschema.Problem
		is.True(errors.As(err, &pr))
		is.Equal(pr.Code, errs.InvalidRequest)
		is.Equal(pr.Path, path)
	}
	_, err := structured.Prepare(structured.Spec{Kind: chat.OutputJSONSchema, Name: "x y", Schema: []byte(`{}`), NamePath: "n"})
	var pr *toolschema.Problem
	is.True(errors.As(err, &pr))
	is.Equal(pr.Path, "n") // the name rule: 1 to 64 letters, digits, _ or -
}

func TestTheInstructionIsFixedTextAndTheSchemaAlone(t *testing.T) {
	is := is.New(t)
	f := prepare(t, `{"type":"object","description":"a city","properties":{"c":{"$ref":"#/$defs/C"}},"$defs":{"C":{"type":"string"}}}`, false)
	ins := structured.Instruction(f)
	is.Equal(ins, structured.InstructionSchema+`{"type":"object","description":"a city","properties":{"c":{"type":"string"}}}`)
	is.True(!strings.Contains(ins, "weather_report")) // the name is not sent
	kind, schema, ok := structured.FromQuery("user: hi" + ins)
	is.True(ok)
	is.Equal(kind, chat.OutputJSONSchema)
	is.Equal(string(schema), string(f.Checked))
	is.Equal(structured.Instruction(chat.OutputFormat{Kind: chat.OutputJSONObject}), structured.InstructionObject)
	is.Equal(structured.Instruction(chat.OutputFormat{}), "")
}

func TestZodFormatPatternsAreAccepted(t *testing.T) {
	is := is.New(t)
	// As zod 4.6.7's toJSONSchema writes z.iso.datetime(), z.iso.date(), z.uuid() and z.email().
	f := prepare(t, `{"type":"object","properties":{`+
		`"when":{"type":"string","format":"date-time","pattern":"^(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|(?:02)-(?:0[1-9]|1\\d|2[0-8])))T(?:(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d+)?(?:Z))$"},`+
		`"day":{"type":"string","format":"date","pattern":"^(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|(?:02)-(?:0[1-9]|1\\d|2[0-8])))$"},`+
		`"id":{"type":"string","format":"uuid","pattern":"^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$"},`+
		`"mail":{"type":"string","format":"email","pattern":"^(?:[A-Za-z0-9_'+\\-]+\\.)*[A-Za-z0-9_'+\\-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9][A-Za-z0-9\\-]*\\.)+[A-Za-z]{2,}$"}},`+
		`"required":["when","day","id","mail"],"additionalProperties":false}`, true)
	_, err := structured.Check(f, `{"when":"2024-02-29T12:00:00Z","day":"2024-02-29","id":"123e4567-e89b-12d3-a456-426614174000","mail":"ada@example.com"}`)
	is.NoErr(err)
	is.Equal(refusal(t, f, `{"when":"2024-02-29T12:00:00+01:00","day":"2024-02-29","id":"123e4567-e89b-12d3-a456-426614174000","mail":"ada@example.com"}`),
		"answer.when: does not match the response schema (pattern).") // valid RFC 3339, but zod's pattern wants Z
}

// A lone surrogate escape is valid JSON that clients decode differently
// (encoding/json reads U+FFFD, JSON.parse half a surrogate pair), so a schema
// whose enum, const or pattern names U+FFFD cannot vouch for it: the answer
// is refused, in every mode, in a value or a key; U+FFFD itself, written or
// escaped, and a whole surrogate pair are kept.
func TestALoneSurrogateEscapeIsRefusedWhateverTheSchemaSays(t *testing.T) {
	is := is.New(t)
	formats := map[string]chat.OutputFormat{
		"enum":        prepare(t, `{"type":"object","properties":{"m":{"enum":["\ufffd"]}},"required":["m"]}`, false),
		"const":       prepare(t, `{"type":"object","properties":{"m":{"const":"\ufffd"}},"required":["m"]}`, false),
		"pattern":     prepare(t, `{"type":"object","properties":{"m":{"type":"string","pattern":"^\\ufffd$"}},"required":["m"]}`, false),
		"json_object": {Kind: chat.OutputJSONObject},
	}
	for name, f := range formats {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			for _, answer := range []string{`{"m":"\ud800"}`, `{"m":"\udfff"}`, `{"m":"\ud83d\u0041"}`} {
				is.Equal(refusal(t, f, answer), structured.ReasonLoneSurrogate+".") // refused, not checked as U+FFFD
			}
			for _, answer := range []string{`{"m":"` + "\uFFFD" + `"}`, `{"m":"\ufffd"}`, `{"m":"\uFFFD"}`} {
				got, err := structured.Check(f, answer)
				is.NoErr(err) // U+FFFD itself is what the schema names
				is.Equal(got, answer)
			}
		})
	}
	anyValue, err := structured.Prepare(structured.Spec{Kind: chat.OutputJSONSchema, Name: "x"})
	is.NoErr(err)
	is.Equal(refusal(t, anyValue, `{"\udc00":1}`), structured.ReasonLoneSurrogate+".")     // in a key
	is.Equal(refusal(t, anyValue, `["ok","\ud800x"]`), structured.ReasonLoneSurrogate+".") // anywhere in the value
	_, err = structured.Check(anyValue, `"\ud83d\ude00"`)
	is.NoErr(err)                                                                 // a pair is one code point
	is.Equal(refusal(t, anyValue, `{"a":"\ud800"`), structured.ReasonNotJSON+".") // broken JSON is reported as such
}
