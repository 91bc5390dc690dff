package toolschema_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/toolschema"
)

func mustLower(t *testing.T, schema string, opts toolschema.Options) string {
	t.Helper()
	out, err := toolschema.Lower([]byte(schema), root, opts)
	if err != nil {
		t.Fatalf("lower: %v", err)
	}
	return string(out)
}

func problemOf(t *testing.T, schema string, opts toolschema.Options) *toolschema.Problem {
	t.Helper()
	_, err := toolschema.Lower([]byte(schema), root, opts)
	var pr *toolschema.Problem
	if !errors.As(err, &pr) {
		t.Fatalf("want a problem, got %v", err)
	}
	return pr
}

var lowerOpts = toolschema.Options{}

// A schema shaped like Claude Code's tools: draft-07, closed objects, one
// property with a pattern and one with format uri.
const claudeCodeLike = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,` +
	`"properties":{"url":{"type":"string","format":"uri","description":"The URL to fetch content from"},` +
	`"prompt":{"type":"string","description":"The prompt to run on the fetched content"},` +
	`"resumeFromRunId":{"type":"string","pattern":"^[a-zA-Z0-9_-]+$"}},"required":["url","prompt"]}`

func TestClaudeCodeLikeSchemaIsLowered(t *testing.T) {
	is := is.New(t)
	out := mustLower(t, claudeCodeLike, lowerOpts)
	is.Equal(out, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","additionalProperties":false,`+
		`"properties":{"url":{"type":"string","description":"The URL to fetch content from\nSchema notes: format: uri"},`+
		`"prompt":{"type":"string","description":"The prompt to run on the fetched content"},`+
		`"resumeFromRunId":{"type":"string","description":"Schema notes: pattern: ^[a-zA-Z0-9_-]+$"}},"required":["url","prompt"]}`) // only the annotations moved, in the caller's order
	_, err := toolschema.Lower([]byte(claudeCodeLike), root, toolschema.Options{Policy: toolschema.PolicyStrict})
	var pr *toolschema.Problem
	is.True(errors.As(err, &pr))                                  // strict still refuses it
	is.Equal(pr.Path, root+".properties.resumeFromRunId.pattern") // at the first keyword in sorted order
}

// zod-to-json-schema output (draft-07 target, $ref strategy "root").
const zodLike = `{"$ref":"#/definitions/Args","definitions":{"Args":{"type":"object","properties":{` +
	`"email":{"type":"string","format":"email"},"site":{"type":"string","format":"uri"},` +
	`"id":{"type":"string","format":"uuid"},"at":{"type":"string","format":"date-time"},` +
	`"code":{"type":"string","pattern":"^[A-Z]{3}$"},` +
	`"labels":{"type":"object","additionalProperties":{"type":"string"},"propertyNames":{"pattern":"^[a-z]+$"}},` +
	`"owner":{"$ref":"#/definitions/Person"},"reviewer":{"$ref":"#/definitions/Person","description":"Who reviews"}},` +
	`"required":["email","owner"],"additionalProperties":false},` +
	`"Person":{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"],"additionalProperties":false}},` +
	`"$schema":"http://json-schema.org/draft-07/schema#"}`

func TestZodLikeSchemaIsLowered(t *testing.T) {
	is := is.New(t)
	out := mustLower(t, zodLike, lowerOpts)
	person := `{"type":"object","properties":{"name":{"type":"string","minLength":1}},"required":["name"],"additionalProperties":false}`
	is.Equal(out, `{"type":"object","properties":{`+
		`"email":{"type":"string","description":"Schema notes: format: email"},"site":{"type":"string","description":"Schema notes: format: uri"},`+
		`"id":{"type":"string","description":"Schema notes: format: uuid"},"at":{"type":"string","description":"Schema notes: format: date-time"},`+
		`"code":{"type":"string","description":"Schema notes: pattern: ^[A-Z]{3}$"},`+
		`"labels":{"type":"object","additionalProperties":true,"description":"Schema notes: additionalProperties: {\"type\":\"string\"}; propertyNames: {\"pattern\":\"^[a-z]+$\"}"},`+
		`"owner":`+person+`,"reviewer":`+strings.TrimSuffix(person, "}")+`,"description":"Who reviews"}},`+
		`"required":["email","owner"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`) // refs inlined, definitions gone
	is.True(!strings.Contains(out, "$ref") && !strings.Contains(out, "definitions")) // nothing outside the vocabulary is left
	defs := strings.ReplaceAll(zodLike, "definitions", "$defs")                      // zod 4 and pydantic use $defs
	is.Equal(mustLower(t, defs, lowerOpts), out)                                     // to the same effect
}

func TestNotesAreSortedBoundedAndAppended(t *testing.T) {
	is := is.New(t)
	out := mustLower(t, `{"type":"object","properties":{"a":{"x-z":1,"pattern":"p","description":"A","format":"f","$comment":"c"}}}`, lowerOpts)
	is.Equal(out, `{"type":"object","properties":{"a":{"description":"A\nSchema notes: $comment: c; format: f; pattern: p; x-z: 1"}}}`) // sorted by keyword, after the caller's text
	long := strings.Repeat("é", 400)
	out = mustLower(t, `{"type":"object","properties":{"a":{"pattern":"`+long+`"}}}`, lowerOpts)
	is.True(strings.Contains(out, "…"))                                                                           // a long value is cut, visibly
	is.True(len(out) < len(`{"type":"object","properties":{"a":{"description":"Schema notes: pattern: "}}}`)+300) // to a bounded length
	many := `{"type":"object","properties":{"a":{`
	for i := 0; i < 40; i++ {
		many += fmt.Sprintf(`"x-k%02d":"%s",`, i, strings.Repeat("v", 200))
	}
	out = mustLower(t, strings.TrimSuffix(many, ",")+`}}}`, lowerOpts)
	is.True(len(out) < 1200) // all notes of one schema together are bounded too
}

func TestNothingToLowerKeepsTheCallersBytes(t *testing.T) {
	is := is.New(t)
	schema := `{ "type":"object", "properties": {"b":{"type":"string"},"a":{"type":"integer"}} }`
	is.Equal(mustLower(t, schema, lowerOpts), schema) // byte for byte, whitespace and order included
	is.Equal(mustLower(t, schema, toolschema.Options{Policy: toolschema.PolicyStrict}), schema)
}

func TestRefsAreInlinedWithJSONPointerEscapes(t *testing.T) {
	is := is.New(t)
	out := mustLower(t, `{"type":"object","properties":{"a":{"$ref":"#/$defs/a~1b"},"t":{"$ref":"#/$defs/t~0x"},"n":{"$ref":"#/$defs/obj/properties/inner"}},`+
		`"$defs":{"a/b":{"type":"string"},"t~x":{"type":"integer"},"obj":{"type":"object","properties":{"inner":{"type":"boolean"}}}}}`, lowerOpts)
	is.Equal(out, `{"type":"object","properties":{"a":{"type":"string"},"t":{"type":"integer"},"n":{"type":"boolean"}}}`) // ~1 is "/", ~0 is "~", deeper pointers work
}

func TestRefSiblingsApplyTogetherWithTheDefinition(t *testing.T) {
	is := is.New(t)
	defs := `,"$defs":{"S":{"type":"string","minLength":1,"description":"A name"}}}`
	out := mustLower(t, `{"type":"object","properties":{"a":{"$ref":"#/$defs/S","description":"Owner","title":"T"}}`+defs, lowerOpts)
	is.Equal(out, `{"type":"object","properties":{"a":{"type":"string","minLength":1,"description":"Owner\nA name","title":"T"}}}`) // meta-data merges; both descriptions kept
	out = mustLower(t, `{"type":"object","properties":{"a":{"$ref":"#/$defs/S","maxLength":5}}`+defs, lowerOpts)
	is.Equal(out, `{"type":"object","properties":{"a":{"type":"string","minLength":1,"description":"A name","maxLength":5}}}`) // independent keywords merge
	out = mustLower(t, `{"type":"object","properties":{"a":{"$ref":"#/$defs/S","minLength":3}}`+defs, lowerOpts)
	is.Equal(out, `{"type":"object","properties":{"a":{"minLength":3,"allOf":[{"type":"string","minLength":1,"description":"A name"}]}}}`) // the same keyword on both sides: both must hold
	out = mustLower(t, `{"type":"object","properties":{"a":{"$ref":"#/$defs/O","properties":{"y":{}}}},"$defs":{"O":{"type":"object","additionalProperties":false}}}`, lowerOpts)
	is.True(strings.Contains(out, `"allOf"`)) // properties next to a closed definition are not merged into it (that would open it)
}

func TestRecursiveRefsAreRefusedWithTheirPath(t *testing.T) {
	is := is.New(t)
	pr := problemOf(t, `{"type":"object","properties":{"tree":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}}},"B":{"type":"array","items":{"$ref":"#/$defs/A"}}}}`, lowerOpts)
	is.Equal(pr.Code, errs.UnsupportedParameter)  // a cycle cannot be inlined
	is.Equal(pr.Path, root+".$defs.B.items.$ref") // named where it closes
	is.True(strings.Contains(pr.Detail, "recursive"))
	pr = problemOf(t, `{"type":"object","properties":{"self":{"$ref":"#"}}}`, lowerOpts)
	is.Equal(pr.Path, root+".properties.self.$ref") // a reference to the root is not into $defs
}

func TestRefsOutsideTheDefinitionsAreRefused(t *testing.T) {
	for _, ref := range []string{"https://example.com/s.json", "other.json#/$defs/a", "#/properties/a", "#a", "#/$defs", "#/$defs/%61", "#/$defs/a~2"} {
		t.Run(ref, func(t *testing.T) {
			is := is.New(t)
			pr := problemOf(t, `{"type":"object","properties":{"a":{"$ref":"`+ref+`"},"b":{}},"$defs":{"a":{}}}`, lowerOpts)
			is.Equal(pr.Code, errs.UnsupportedParameter) // refused
			is.Equal(pr.Path, root+".properties.a.$ref") // with its path
		})
	}
	is := is.New(t)
	pr := problemOf(t, `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}},"$defs":{}}`, lowerOpts)
	is.Equal(pr.Code, errs.InvalidRequest) // a pointer to nothing is a broken schema
	pr = problemOf(t, `{"type":"object","properties":{"a":{"$id":"urn:x","properties":{"b":{"$ref":"#/$defs/s"}}}},"$defs":{"s":{}}}`, lowerOpts)
	is.Equal(pr.Path, root+".properties.a.properties.b.$ref") // below a nested $id the pointer means another document
}

// dag returns a schema whose definitions D0…Dn-1 each reference the next one
// twice: inlining doubles at every level.
func dag(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"root":{"$ref":"#/$defs/D0"}},"$defs":{`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		if i == n-1 {
			fmt.Fprintf(&b, `"D%d":{"type":"string","description":"leaf"}`, i)
			continue
		}
		fmt.Fprintf(&b, `"D%d":{"type":"object","properties":{"l":{"$ref":"#/$defs/D%d"},"r":{"$ref":"#/$defs/D%d"}}}`, i, i+1, i+1)
	}
	b.WriteString("}}")
	return b.String()
}

func TestARefDAGCannotBlowUpTheSchema(t *testing.T) {
	is := is.New(t)
	out := mustLower(t, dag(6), lowerOpts)
	is.Equal(strings.Count(out, `"leaf"`), 32) // a small DAG is inlined in full
	pr := problemOf(t, dag(30), lowerOpts)     // 2^29 leaves: far beyond any limit
	is.Equal(pr.Code, errs.UnsupportedParameter)
	is.True(strings.HasPrefix(pr.Path, root+".$defs.D")) // refused where the size is exceeded
	is.True(strings.Contains(pr.Detail, "larger than"))
	pr = problemOf(t, dag(12), toolschema.Options{MaxBytes: 4096})
	is.True(strings.Contains(pr.Detail, "larger than 4096 bytes")) // the bound is configurable
}

func TestInliningCountsTowardsTheDepthLimit(t *testing.T) {
	is := is.New(t)
	// Each definition nests the next one level deeper: 20 inside 20.
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"object","properties":{"a":`, 19) + `{"$ref":"#/$defs/C0"}` + strings.Repeat(`}}`, 19) + `},"$defs":{`)
	for i := 0; i < 20; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		next := `{}`
		if i < 19 {
			next = fmt.Sprintf(`{"$ref":"#/$defs/C%d"}`, i+1)
		}
		fmt.Fprintf(&b, `"C%d":{"type":"object","properties":{"a":%s}}`, i, next)
	}
	b.WriteString("}}")
	pr := problemOf(t, b.String(), lowerOpts)
	is.Equal(pr.Code, errs.UnsupportedParameter)
	is.True(strings.HasSuffix(pr.Path, ".$ref"))      // refused at the reference whose inlining is too deep
	is.True(strings.Contains(pr.Detail, "32 levels")) // by the depth limit
}

func TestWideningRemovesCombinators(t *testing.T) {
	is := is.New(t)
	widen := toolschema.Options{WidenCombinators: true}
	out := mustLower(t, `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"null"}],"description":"V"},"w":{"type":"object","allOf":[{"required":["a"]}],"oneOf":[{"required":["b"]}]}}}`, widen)
	is.Equal(out, `{"type":"object","properties":{"v":{"description":"V\nSchema notes: anyOf: [{\"type\":\"string\"},{\"type\":\"null\"}]"},`+
		`"w":{"type":"object","description":"Schema notes: allOf: [{\"required\":[\"a\"]}]; oneOf: [{\"required\":[\"b\"]}]"}}}`) // no combinator reaches the upstream
	s, err := toolschema.Compile([]byte(out))
	is.NoErr(err)
	is.NoErr(s.Validate(`{"v":5,"w":{}}`))                                                                                                                                              // validation uses the widened schema
	is.True(!strings.Contains(mustLower(t, `{"type":"object","properties":{"a":{"$ref":"#/$defs/S","minLength":2}},"$defs":{"S":{"type":"string","minLength":1}}}`, widen), `"allOf"`)) // even the allOf a $ref sibling needs
	is.Equal(mustLower(t, `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"}]}}}`, lowerOpts), `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"}]}}}`)       // off by default
}

func TestMalformedSchemasAreInvalid(t *testing.T) {
	for name, c := range map[string]struct{ schema, at string }{
		"duplicate key":     {`{"type":"object","type":"object"}`, ""},
		"$ref not a string": {`{"type":"object","properties":{"a":{"$ref":1}}}`, ".properties.a.$ref"},
		"$defs not object":  {`{"type":"object","$defs":[]}`, ".$defs"},
		"bad type":          {`{"type":"object","properties":{"a":{"type":"text"}}}`, ".properties.a.type"},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			pr := problemOf(t, c.schema, lowerOpts)
			is.Equal(pr.Code, errs.InvalidRequest) // invalid_request
			is.Equal(pr.Path, root+c.at)           // with its path
		})
	}
}

func TestRootMustStayAnObjectSchemaAfterInlining(t *testing.T) {
	is := is.New(t)
	pr := problemOf(t, `{"$ref":"#/$defs/S","$defs":{"S":{"type":"string"}}}`, lowerOpts)
	is.Equal(pr.Path, root+".$ref") // a tool's parameters must describe an object
}

func TestARootTypeListOfObjectMeansObject(t *testing.T) {
	is := is.New(t)
	schema := `{"type":["object"],"properties":{}}`
	is.Equal(mustLower(t, schema, lowerOpts), schema)                                                      // the same meaning as "object"
	is.Equal(problemOf(t, schema, toolschema.Options{Policy: toolschema.PolicyStrict}).Path, root+".type") // strict refuses it as before
	is.Equal(problemOf(t, `{"type":["object","null"]}`, lowerOpts).Path, root+".type")                     // null arguments are not an object
}

func TestUnprintableKeysAreNotEchoed(t *testing.T) {
	is := is.New(t)
	pr := problemOf(t, `{"type":"object","properties":{"a b\u0000":{"not":{}}}}`, lowerOpts)
	is.Equal(pr.Path, root+".properties.?.not") // a key that is not a plain identifier is shown as ?
}

func TestParsePolicy(t *testing.T) {
	is := is.New(t)
	for _, s := range []string{"lower", "strict"} {
		p, ok := toolschema.ParsePolicy(s)
		is.True(ok)
		is.Equal(string(p), s)
	}
	for _, s := range []string{"", "Lower", "STRICT", " lower", "refuse"} {
		_, ok := toolschema.ParsePolicy(s)
		is.True(!ok) // only the exact names
	}
}

func TestAClosedSiteNextToADefinitionsPropertiesIsNotMergedIntoIt(t *testing.T) {
	is := is.New(t)
	// The other direction of the closed-definition case: additionalProperties
	// false at the use site, properties in the definition. Merged into one
	// object the site would admit the definition's properties it refuses.
	out := mustLower(t, `{"type":"object","properties":{"a":{"$ref":"#/$defs/O","additionalProperties":false}},"$defs":{"O":{"type":"object","properties":{"y":{"type":"string"}}}}}`, lowerOpts)
	is.True(strings.Contains(out, `"allOf"`)) // both apply, side by side
}
