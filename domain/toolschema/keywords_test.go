package toolschema_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/toolschema"
)

var update = flag.Bool("update", false, "rewrite the keyword table in docs/TOOL-SCHEMAS.md")

const root = "tools[0].function.parameters"

// example is a schema using one keyword of the table: kw is the key as it
// appears in the schema, at the path suffix of that key (strictAt when strict
// refuses another key first).
type example struct {
	schema   string
	kw, at   string
	strictAt string
}

// prop wraps a subschema as property p of an object schema.
func prop(kw, sub string) example {
	return example{schema: `{"type":"object","properties":{"p":` + sub + `}}`, kw: kw, at: ".properties.p." + kw}
}

func top(kw, schema string) example { return example{schema: schema, kw: kw, at: "." + kw} }

// examples has one entry per row of the keyword table, keyed "name|form".
var examples = map[string]example{
	"$schema|":           top("$schema", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`),
	"$id|at the root":    top("$id", `{"$id":"urn:example:args","type":"object"}`),
	"$id|below the root": prop("$id", `{"$id":"urn:example:p","type":"string"}`),
	"$ref|`#/$defs/…` or `#/definitions/…`":                {schema: `{"type":"object","properties":{"p":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`, kw: "$ref", at: ".properties.p.$ref", strictAt: ".$defs"},
	"$ref|anything else (remote, other pointers, anchors)": prop("$ref", `{"$ref":"https://example.com/s.json"}`),
	"$defs|":                              top("$defs", `{"type":"object","$defs":{"s":{"type":"string"}}}`),
	"$anchor|":                            prop("$anchor", `{"$anchor":"a","type":"string"}`),
	"$dynamicAnchor|":                     prop("$dynamicAnchor", `{"$dynamicAnchor":"a","type":"string"}`),
	"$dynamicRef|":                        prop("$dynamicRef", `{"$dynamicRef":"#a"}`),
	"$vocabulary|":                        top("$vocabulary", `{"type":"object","$vocabulary":{"https://json-schema.org/draft/2020-12/vocab/core":true}}`),
	"$comment|":                           prop("$comment", `{"type":"string","$comment":"internal"}`),
	"allOf|":                              prop("allOf", `{"allOf":[{"type":"string"}]}`),
	"anyOf|":                              prop("anyOf", `{"anyOf":[{"type":"string"},{"type":"null"}]}`),
	"oneOf|":                              prop("oneOf", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`),
	"not|":                                prop("not", `{"not":{"type":"string"}}`),
	"if|":                                 prop("if", `{"if":{"type":"string"}}`),
	"then|":                               prop("then", `{"then":{"type":"string"}}`),
	"else|":                               prop("else", `{"else":{"type":"string"}}`),
	"dependentSchemas|":                   prop("dependentSchemas", `{"type":"object","dependentSchemas":{"a":{"required":["b"]}}}`),
	"prefixItems|":                        prop("prefixItems", `{"type":"array","prefixItems":[{"type":"string"}]}`),
	"items|one schema":                    prop("items", `{"type":"array","items":{"type":"string"}}`),
	"contains|":                           prop("contains", `{"type":"array","contains":{"type":"string"}}`),
	"properties|":                         top("properties", `{"type":"object","properties":{"a":{"type":"string"}}}`),
	"patternProperties|":                  prop("patternProperties", `{"type":"object","patternProperties":{"^a":{"type":"string"}}}`),
	"additionalProperties|boolean":        prop("additionalProperties", `{"type":"object","additionalProperties":false}`),
	"additionalProperties|schema":         prop("additionalProperties", `{"type":"object","additionalProperties":{"type":"string"}}`),
	"propertyNames|":                      prop("propertyNames", `{"type":"object","propertyNames":{"pattern":"^[a-z]+$"}}`),
	"unevaluatedItems|true":               prop("unevaluatedItems", `{"type":"array","unevaluatedItems":true}`),
	"unevaluatedItems|anything else":      prop("unevaluatedItems", `{"type":"array","unevaluatedItems":false}`),
	"unevaluatedProperties|true":          prop("unevaluatedProperties", `{"type":"object","unevaluatedProperties":true}`),
	"unevaluatedProperties|anything else": prop("unevaluatedProperties", `{"type":"object","unevaluatedProperties":{"type":"string"}}`),
	"type|":                               prop("type", `{"type":"string"}`),
	"enum|":                               prop("enum", `{"enum":["a",1,null]}`),
	"const|":                              prop("const", `{"const":{"k":[1]}}`),
	"multipleOf|":                         prop("multipleOf", `{"type":"number","multipleOf":0.5}`),
	"maximum|":                            prop("maximum", `{"type":"number","maximum":10}`),
	"exclusiveMaximum|number":             prop("exclusiveMaximum", `{"type":"number","exclusiveMaximum":10}`),
	"exclusiveMaximum|boolean (draft-04)": prop("exclusiveMaximum", `{"type":"number","maximum":10,"exclusiveMaximum":true}`),
	"minimum|":                            prop("minimum", `{"type":"number","minimum":-1.5}`),
	"exclusiveMinimum|number":             prop("exclusiveMinimum", `{"type":"number","exclusiveMinimum":0}`),
	"exclusiveMinimum|boolean (draft-04)": prop("exclusiveMinimum", `{"type":"number","minimum":0,"exclusiveMinimum":true}`),
	"maxLength|":                          prop("maxLength", `{"type":"string","maxLength":3}`),
	"minLength|":                          prop("minLength", `{"type":"string","minLength":1}`),
	"pattern|":                            prop("pattern", `{"type":"string","pattern":"^[a-z]+$"}`),
	"maxItems|":                           prop("maxItems", `{"type":"array","maxItems":2}`),
	"minItems|":                           prop("minItems", `{"type":"array","minItems":1}`),
	"uniqueItems|":                        prop("uniqueItems", `{"type":"array","uniqueItems":true}`),
	"maxContains|":                        prop("maxContains", `{"type":"array","maxContains":1}`),
	"minContains|":                        prop("minContains", `{"type":"array","minContains":1}`),
	"maxProperties|":                      prop("maxProperties", `{"type":"object","maxProperties":3}`),
	"minProperties|":                      prop("minProperties", `{"type":"object","minProperties":1}`),
	"required|":                           top("required", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`),
	"dependentRequired|":                  prop("dependentRequired", `{"type":"object","dependentRequired":{"a":["b"]}}`),
	"format|":                             prop("format", `{"type":"string","format":"uri"}`),
	"contentEncoding|":                    prop("contentEncoding", `{"type":"string","contentEncoding":"base64"}`),
	"contentMediaType|":                   prop("contentMediaType", `{"type":"string","contentMediaType":"application/json"}`),
	"contentSchema|":                      prop("contentSchema", `{"type":"string","contentSchema":{"type":"object"}}`),
	"title|":                              prop("title", `{"type":"string","title":"T"}`),
	"description|":                        prop("description", `{"type":"string","description":"D"}`),
	"default|":                            prop("default", `{"type":"string","default":"x"}`),
	"deprecated|":                         prop("deprecated", `{"type":"string","deprecated":true}`),
	"readOnly|":                           prop("readOnly", `{"type":"string","readOnly":true}`),
	"writeOnly|":                          prop("writeOnly", `{"type":"string","writeOnly":false}`),
	"examples|":                           prop("examples", `{"type":"string","examples":["x"]}`),
	"definitions|":                        top("definitions", `{"type":"object","definitions":{"s":{"type":"string"}}}`),
	"dependencies|":                       prop("dependencies", `{"type":"object","dependencies":{"a":["b"]}}`),
	"items|array (tuple)":                 prop("items", `{"type":"array","items":[{"type":"string"}]}`),
	"additionalItems|":                    prop("additionalItems", `{"type":"array","additionalItems":false}`),
	"$recursiveRef|":                      prop("$recursiveRef", `{"$recursiveRef":"#"}`),
	"$recursiveAnchor|":                   prop("$recursiveAnchor", `{"type":"object","$recursiveAnchor":true}`),
	"x-…|any `x-` prefixed key":           prop("x-order", `{"type":"string","x-order":1}`),
	"any other keyword|":                  prop("nullable", `{"type":"string","nullable":true}`),
}

func lower(schema string, p toolschema.Policy) (string, error) {
	out, err := toolschema.Lower([]byte(schema), root, toolschema.Options{Policy: p})
	return string(out), err
}

// checkAction asserts that the result of lowering ex under one policy is
// what the table says.
func checkAction(t *testing.T, ex example, a toolschema.Action, out string, err error, strict bool) {
	t.Helper()
	is := is.New(t)
	key := `"` + ex.kw + `":`
	if a == toolschema.Refused {
		var pr *toolschema.Problem
		is.True(errors.As(err, &pr))                 // refused with a problem
		is.Equal(pr.Code, errs.UnsupportedParameter) // as unsupported_parameter
		want := ex.at
		if strict && ex.strictAt != "" {
			want = ex.strictAt
		}
		is.Equal(pr.Path, root+want) // at the keyword's path
		return
	}
	is.NoErr(err) // accepted
	switch a {
	case toolschema.Kept:
		is.True(strings.Contains(out, key)) // the keyword is still there
		if strict {
			is.Equal(out, ex.schema) // strict sends the caller's bytes
		}
	case toolschema.Described:
		is.True(!strings.Contains(out, key))                        // the keyword is gone
		is.True(strings.Contains(out, "Schema notes: "+ex.kw+": ")) // and rendered into the description
	case toolschema.Inlined:
		is.True(!strings.Contains(out, "$ref") && !strings.Contains(out, "$defs")) // no reference or definition is left
		is.True(strings.Contains(out, `"p":{"type":"string"}`))                    // the definition took its place
	case toolschema.MadeTrue:
		is.True(strings.Contains(out, `"additionalProperties":true`))          // made true
		is.True(strings.Contains(out, "Schema notes: additionalProperties: ")) // with the value schema described
	case toolschema.Removed:
		is.True(!strings.Contains(out, key))        // the keyword is gone
		is.True(!strings.Contains(out, ex.kw+": ")) // without a note
	default:
		t.Fatalf("unknown action %q", a)
	}
}

func TestEveryKeywordRowBehavesAsDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range toolschema.Keywords() {
		name := k.Name + "|" + k.Form
		t.Run(name, func(t *testing.T) {
			ex, ok := examples[name]
			if !ok {
				t.Fatalf("no example for row %q", name)
			}
			seen[name] = true
			out, err := lower(ex.schema, toolschema.PolicyLower)
			checkAction(t, ex, k.Lower, out, err, false)
			out, err = lower(ex.schema, toolschema.PolicyStrict)
			checkAction(t, ex, k.Strict, out, err, true)
		})
	}
	for name := range examples {
		if !seen[name] {
			t.Errorf("example %q has no row in the table", name)
		}
	}
}

func TestTheDocumentShowsTheCurrentTable(t *testing.T) {
	is := is.New(t)
	path := filepath.Join("..", "..", "docs", "TOOL-SCHEMAS.md")
	doc, err := os.ReadFile(path)
	is.NoErr(err) // the document exists
	const begin, end = "<!-- keyword-table:begin -->\n", "<!-- keyword-table:end -->"
	before, rest, ok := strings.Cut(string(doc), begin)
	is.True(ok) // the document has the table's begin marker
	_, after, ok := strings.Cut(rest, end)
	is.True(ok) // and its end marker
	want := before + begin + toolschema.Table() + end + after
	if *update {
		is.NoErr(os.WriteFile(path, []byte(want), 0o644))
		return
	}
	is.Equal(string(doc), want) // docs/TOOL-SCHEMAS.md is current (go test ./domain/toolschema -run Document -update)
}
