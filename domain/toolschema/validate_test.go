package toolschema_test

import (
	"math/big"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/toolschema"
)

func compile(t interface{ Fatalf(string, ...any) }, schema string) *toolschema.Schema {
	s, err := toolschema.Compile([]byte(schema))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return s
}

// argCase is one argument set for property v of an object schema, and the
// keyword it must fail ("" when valid).
type argCase struct {
	args, fails string
}

func TestArgumentsAreValidatedPerKeyword(t *testing.T) {
	for name, c := range map[string]struct {
		sub   string
		cases []argCase
	}{
		"type string":   {`{"type":"string"}`, []argCase{{`"a"`, ""}, {`1`, "type"}, {`null`, "type"}}},
		"type integer":  {`{"type":"integer"}`, []argCase{{`1`, ""}, {`1.0`, ""}, {`-2e3`, ""}, {`1.5`, "type"}, {`1e-1`, "type"}, {`"1"`, "type"}}},
		"type number":   {`{"type":"number"}`, []argCase{{`1.5`, ""}, {`-0`, ""}, {`true`, "type"}}},
		"type list":     {`{"type":["string","null"]}`, []argCase{{`null`, ""}, {`"x"`, ""}, {`0`, "type"}}},
		"type boolean":  {`{"type":"boolean"}`, []argCase{{`false`, ""}, {`0`, "type"}}},
		"type array":    {`{"type":"array"}`, []argCase{{`[]`, ""}, {`{}`, "type"}}},
		"type object":   {`{"type":"object"}`, []argCase{{`{}`, ""}, {`[]`, "type"}}},
		"enum":          {`{"enum":["a",1,{"k":[1,2]}]}`, []argCase{{`"a"`, ""}, {`1.0`, ""}, {`10e-1`, ""}, {`{"k":[1,2.0]}`, ""}, {`"b"`, "enum"}, {`{"k":[2,1]}`, "enum"}}},
		"const":         {`{"const":{"a":1,"b":"x"}}`, []argCase{{`{"b":"x","a":1}`, ""}, {`{"a":1}`, "const"}, {`{"a":1,"b":"x","c":null}`, "const"}}},
		"minimum":       {`{"minimum":2}`, []argCase{{`2`, ""}, {`2.5`, ""}, {`1.999999999999999999999`, "minimum"}, {`"s"`, ""}}},
		"maximum":       {`{"maximum":-1}`, []argCase{{`-1`, ""}, {`-1e100`, ""}, {`-0.5`, "maximum"}}},
		"exclusiveMin":  {`{"exclusiveMinimum":0}`, []argCase{{`1e-300`, ""}, {`0`, "exclusiveMinimum"}, {`-0.0`, "exclusiveMinimum"}}},
		"exclusiveMax":  {`{"exclusiveMaximum":1e3}`, []argCase{{`999.99`, ""}, {`1000`, "exclusiveMaximum"}}},
		"multipleOf":    {`{"multipleOf":0.1}`, []argCase{{`0.3`, ""}, {`7`, ""}, {`0`, ""}, {`0.35`, "multipleOf"}}},
		"minLength":     {`{"minLength":2}`, []argCase{{`"ab"`, ""}, {`"é😀"`, ""}, {`"é"`, "minLength"}, {`7`, ""}}},
		"maxLength":     {`{"maxLength":2}`, []argCase{{`"😀😀"`, ""}, {`"abc"`, "maxLength"}}},
		"minItems":      {`{"minItems":1}`, []argCase{{`[1]`, ""}, {`[]`, "minItems"}}},
		"maxItems":      {`{"maxItems":1}`, []argCase{{`[1]`, ""}, {`[1,2]`, "maxItems"}}},
		"uniqueItems":   {`{"uniqueItems":true}`, []argCase{{`[1,"1",[1],{"a":1}]`, ""}, {`[1,1.0]`, "uniqueItems"}, {`[{"a":1,"b":2},{"b":2,"a":1}]`, "uniqueItems"}}},
		"items":         {`{"items":{"type":"integer"}}`, []argCase{{`[1,2]`, ""}, {`[1,"2"]`, "type"}}},
		"required":      {`{"required":["a"]}`, []argCase{{`{"a":null}`, ""}, {`{"b":1}`, "required"}}},
		"properties":    {`{"properties":{"a":{"type":"string"}}}`, []argCase{{`{"a":"x","b":1}`, ""}, {`{"a":1}`, "type"}}},
		"closed object": {`{"properties":{"a":{}},"additionalProperties":false}`, []argCase{{`{"a":1}`, ""}, {`{"a":1,"b":2}`, "additionalProperties"}}},
		"open object":   {`{"properties":{"a":{}},"additionalProperties":true}`, []argCase{{`{"b":2}`, ""}}},
		"minProperties": {`{"minProperties":1}`, []argCase{{`{"a":1}`, ""}, {`{}`, "minProperties"}}},
		"maxProperties": {`{"maxProperties":1}`, []argCase{{`{"a":1}`, ""}, {`{"a":1,"b":2}`, "maxProperties"}}},
		"anyOf":         {`{"anyOf":[{"type":"string"},{"type":"integer"}]}`, []argCase{{`"x"`, ""}, {`2`, ""}, {`2.5`, "anyOf"}}},
		"oneOf":         {`{"oneOf":[{"type":"integer"},{"type":"number"}]}`, []argCase{{`2.5`, ""}, {`2`, "oneOf"}, {`"x"`, "oneOf"}}},
		"allOf":         {`{"allOf":[{"type":"integer"},{"minimum":3}]}`, []argCase{{`3`, ""}, {`2`, "minimum"}}},
		"descriptive":   {`{"description":"d","title":"t","default":1,"examples":[1],"deprecated":true,"readOnly":true,"writeOnly":false,"$schema":"x","$id":"y"}`, []argCase{{`"anything"`, ""}}},
	} {
		t.Run(name, func(t *testing.T) {
			s := compile(t, `{"type":"object","properties":{"v":`+c.sub+`}}`)
			for _, ac := range c.cases {
				is := is.New(t)
				err := s.Validate(`{"v":` + ac.args + `}`)
				if ac.fails == "" {
					is.NoErr(err) // valid arguments pass
					continue
				}
				var ae *toolschema.ArgumentsError
				is.True(errors.As(err, &ae)) // invalid arguments fail
				is.Equal(ae.Keyword, ac.fails)
				is.True(strings.HasPrefix(ae.Path, ".v")) // at the failing property
			}
		})
	}
}

func TestArgumentErrorsNameThePathNeverTheValue(t *testing.T) {
	is := is.New(t)
	s := compile(t, `{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}}}}},"additionalProperties":false}`)
	var ae *toolschema.ArgumentsError
	is.True(errors.As(s.Validate(`{"items":[{"n":1},{"n":"secret-value"}]}`), &ae))
	is.Equal(ae.Path, ".items[1].n") // the path inside the arguments
	ae.Call = 2
	is.Equal(ae.PublicDetail(), "tool_calls[2].function.arguments.items[1].n: does not match the tool's schema (type).")
	is.True(!strings.Contains(ae.Error(), "secret")) // the value never appears
	is.True(errors.As(s.Validate(`{"sk-live secret":1}`), &ae))
	is.Equal(ae.Path, ".?") // an unexpected key that is not a plain identifier is not echoed
	is.True(errors.As(s.Validate(`[1]`), &ae))
	is.Equal(ae.Keyword, "type") // the arguments must be an object
}

func TestSchemalessToolsAcceptAnyObject(t *testing.T) {
	is := is.New(t)
	s, err := toolschema.Compile(nil)
	is.NoErr(err)
	is.NoErr(s.Validate(`{"anything":[1,2]}`))
	is.True(s.Validate(`"x"`) != nil)
}

func TestHugeExponentsFailClosedAndFast(t *testing.T) {
	is := is.New(t)
	s := compile(t, `{"type":"object","properties":{"i":{"type":"integer"},"m":{"multipleOf":3},"n":{"type":"number","minimum":0}}}`)
	is.True(s.Validate(`{"i":1e999999999}`) != nil) // an exponent beyond the bound is refused, not computed
	is.True(s.Validate(`{"m":3e100000}`) != nil)    // multipleOf fails closed beyond its scale
	is.NoErr(s.Validate(`{"m":3e1000}`))            // and is exact within it
	is.NoErr(s.Validate(`{"n":1e400}`))             // comparisons need no float: 1e400 is not +Inf
	is.True(s.Validate(`{"n":-1e-400}`) != nil)     // nor is -1e-400 zero
}

// decimalRat is the exact value of a JSON number literal.
func decimalRat(lit string) *big.Rat {
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		panic(lit)
	}
	return r
}

// numberLiteral draws a JSON number literal with a small exponent.
func numberLiteral(t *rapid.T, label string) string {
	lit := rapid.SampledFrom([]string{"", "-"}).Draw(t, label+"sign") +
		rapid.StringMatching(`(0|[1-9][0-9]{0,6})`).Draw(t, label+"int")
	if rapid.Bool().Draw(t, label+"hasfrac") {
		lit += "." + rapid.StringMatching(`[0-9]{1,5}`).Draw(t, label+"frac")
	}
	if rapid.Bool().Draw(t, label+"hasexp") {
		lit += rapid.SampledFrom([]string{"e", "E", "e+", "e-"}).Draw(t, label+"e") + rapid.StringMatching(`[0-9]{1,2}`).Draw(t, label+"exp")
	}
	return lit
}

// The exact comparison agrees with big.Rat on every bound keyword.
func TestNumericBoundsAgreeWithExactArithmetic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x, b := numberLiteral(t, "x"), numberLiteral(t, "b")
		c := decimalRat(x).Cmp(decimalRat(b))
		for kw, want := range map[string]bool{"minimum": c >= 0, "maximum": c <= 0, "exclusiveMinimum": c > 0, "exclusiveMaximum": c < 0} {
			s := compile(t, `{"type":"object","properties":{"v":{"`+kw+`":`+b+`}}}`)
			if got := s.Validate(`{"v":`+x+`}`) == nil; got != want {
				t.Fatalf("%s %s vs %s: got %v, want %v", kw, x, b, got, want)
			}
		}
		enum := compile(t, `{"type":"object","properties":{"v":{"enum":[`+b+`]}}}`)
		if got := enum.Validate(`{"v":`+x+`}`) == nil; got != (c == 0) {
			t.Fatalf("enum %s vs %s: got %v", x, b, got)
		}
		isInt := decimalRat(x).IsInt()
		integer := compile(t, `{"type":"object","properties":{"v":{"type":"integer"}}}`)
		if got := integer.Validate(`{"v":`+x+`}`) == nil; got != isInt {
			t.Fatalf("integer %s: got %v", x, got)
		}
		if decimalRat(b).Sign() > 0 {
			q := new(big.Rat).Quo(decimalRat(x), decimalRat(b))
			m := compile(t, `{"type":"object","properties":{"v":{"multipleOf":`+b+`}}}`)
			if got := m.Validate(`{"v":`+x+`}`) == nil; got != q.IsInt() {
				t.Fatalf("multipleOf %s / %s: got %v", x, b, got)
			}
		}
	})
}

// A structured answer (ValidateValue) with a lone surrogate escape is
// ErrLoneSurrogate, whatever the schema; tool arguments (Validate) still read
// it as U+FFFD, as encoding/json does (docs/TOOL-CALLING.md).
func TestALoneSurrogateEscapeIsNoValueToValidate(t *testing.T) {
	is := is.New(t)
	s := compile(t, `{"type":"object","properties":{"m":{"enum":["`+"\uFFFD"+`"]}}}`)
	is.True(errors.Is(s.ValidateValue(`{"m":"\ud800"}`), toolschema.ErrLoneSurrogate)) // fails closed
	is.True(errors.Is(s.ValidateValue(`{"m":"\ud800"`), toolschema.ErrNotJSON))        // broken JSON first
	is.NoErr(s.ValidateValue(`{"m":"\ufffd"}`))                                        // U+FFFD itself
	is.NoErr(s.Validate(`{"m":"\ud800"}`))                                             // arguments: U+FFFD
}
