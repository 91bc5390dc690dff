package emulator_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// The emulator builds its arguments from the schema the gateway sends, which
// is the lowered one; the gateway validates them against that same schema, so
// they must be valid for every shape a lowered schema can take.
func TestArgumentsAreValidForLoweredSchemas(t *testing.T) {
	schemas := map[string]string{
		"claude code": `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,"properties":{"url":{"type":"string","format":"uri"},"id":{"type":"string","pattern":"^[a-z]+$"},"mode":{"type":"string","enum":["fast","slow"]}},"required":["url","id","mode"]}`,
		"zod refs":    `{"$ref":"#/definitions/A","definitions":{"A":{"type":"object","properties":{"owner":{"$ref":"#/definitions/P"},"tags":{"type":"array","items":{"type":"string","format":"uuid"},"minItems":2},"labels":{"type":"object","additionalProperties":{"type":"string"}}},"required":["owner","tags","labels"],"additionalProperties":false},"P":{"type":"object","properties":{"name":{"type":"string","minLength":12},"age":{"type":"integer","minimum":18,"multipleOf":5}},"required":["name","age"]}}}`,
		"bounds":      `{"type":"object","properties":{"s":{"type":"string","maxLength":3},"n":{"type":"number","exclusiveMinimum":7.5},"c":{"const":{"k":1}},"z":{"type":["null","integer"]},"b":{"type":"boolean"}},"required":["s","n","c","z","b"]}`,
		"combinators": `{"type":"object","properties":{"a":{"anyOf":[{"type":"string","minLength":2},{"type":"null"}]},"o":{"oneOf":[{"type":"integer"},{"type":"string"}]},"all":{"allOf":[{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]},{"properties":{"y":{"type":"boolean"}},"required":["y"]}]}},"required":["a","o","all"]}`,
		"no type":     `{"type":"object","properties":{"free":{"description":"anything"}},"required":["free","missing"]}`,
	}
	var long strings.Builder
	long.WriteString(`{"type":"object","properties":{`)
	for i := 0; i < 400; i++ {
		if i > 0 {
			long.WriteString(",")
		}
		fmt.Fprintf(&long, `"p%03d":{"type":"string","format":"date-time","pattern":"^[0-9]+$","description":"%s"}`, i, strings.Repeat("d", 100))
	}
	long.WriteString(`},"required":["p000","p399"]}`)
	schemas["long"] = long.String()

	for name, schema := range schemas {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			lowered, err := toolschema.Lower([]byte(schema), "p", toolschema.Options{})
			is.NoErr(err)
			args, ok := emulator.ArgumentsFor(lowered)
			is.True(ok) // the emulator reads the lowered schema
			s, err := toolschema.Compile(lowered)
			is.NoErr(err)
			is.NoErr(s.Validate(args)) // and its arguments pass the gateway's validation
		})
	}
}

// TestArgumentsSatisfyTheFormatsClientsValidate: a client validates formats
// itself (the AI SDK runs zod's .email(), .uuid(), .datetime() on the
// arguments) even where the gateway moved them into the description, so the
// emulator fills a format it reads from the keyword or from that note.
func TestArgumentsSatisfyTheFormatsClientsValidate(t *testing.T) {
	is := is.New(t)
	schema := `{"type":"object","properties":{` +
		`"email":{"type":"string","format":"email"},` +
		`"site":{"type":"string","format":"uri"},` +
		`"id":{"type":"string","format":"uuid","pattern":"^[0-9a-f-]+$"},` +
		`"at":{"type":"string","description":"When","format":"date-time"},` +
		`"day":{"type":"string","format":"date"},` +
		`"free":{"type":"string","format":"hostname"}},` +
		`"required":["email","site","id","at","day","free"]}`
	want := `{"at":"2026-01-01T00:00:00Z","day":"2026-01-01","email":"user@example.com","free":"value-free",` +
		`"id":"00000000-0000-4000-8000-000000000000","site":"https://example.com/"}`
	args, ok := emulator.ArgumentsFor([]byte(schema))
	is.True(ok)
	is.Equal(args, want) // from the format keyword
	lowered, err := toolschema.Lower([]byte(schema), "p", toolschema.Options{})
	is.NoErr(err)
	is.True(!strings.Contains(string(lowered), `"format"`)) // the lowering moved every format into the description
	args, ok = emulator.ArgumentsFor(lowered)
	is.True(ok)
	is.Equal(args, want) // from the description's note
	s, err := toolschema.Compile(lowered)
	is.NoErr(err)
	is.NoErr(s.Validate(args)) // and still valid for the gateway
}
