package toolschema_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/toolschema"
)

func TestPatternsAreReadTheWayECMAScriptReadsThem(t *testing.T) {
	is := is.New(t)
	for _, c := range []struct {
		pattern, value string
		match          bool
	}{
		{`^a.c$`, "abc", true},
		{`^a.c$`, "a\rc", false},     // . excludes every ECMAScript line terminator, not only \n
		{`^a.c$`, "a\u2028c", false}, // U+2028 too
		{`^\s$`, "\u00a0", true},     // \s is ECMAScript's white space (RE2's is ASCII only)
		{`^\S$`, "\u3000", false},    //
		{`^[\s]$`, "\ufeff", true},   // and inside a class
		{`^[[]$`, "[", true},         // [ in a class is a literal, not a POSIX class opener
		{`^\u00e9$`, "é", true},      // \uHHHH
		{`^(?<y>\d{4})-\d\d$`, "2024-01", true},
		{`^\d+$`, "١٢", false},         // \d is ASCII in both
		{`colou?r`, "my colour", true}, // a pattern is not anchored
		{`^a{2,3}$`, "aaaa", false},
	} {
		re, ok := toolschema.CompilePattern(c.pattern)
		is.True(ok)
		is.Equal(re.MatchString(c.value), c.match)
	}
}

func TestPatternsThatMayMeanSomethingElseInGoAreRefused(t *testing.T) {
	is := is.New(t)
	for _, p := range []string{
		`(?=a)`, `(?!a)`, `(?<=a)b`, `(?<!a)b`, // lookaround
		`(a)\1`, `\k<a>`, // backreferences
		`(?i)a`,          // inline flags
		`\p{L}`, `\P{L}`, // property escapes (their meaning depends on the u flag)
		`\cJ`, `\u{61}`, `\07`, // control, code point and octal escapes
		`[^]`, `[]`, `[\b]`, `[\S]`, // empty and any classes, backspace, \S in a class
		`\e`, `\a`, `\z`, // letters without a meaning in both
		`a{`, `a}`, `x{1001}`, // a literal brace; a count Go refuses
		"😀",            // beyond U+FFFF
		`(`, `[a`, `*`, // not a regular expression
	} {
		_, ok := toolschema.CompilePattern(p)
		is.True(!ok)
	}
}

// FuzzCompilePattern: the translator never panics, and what it accepts
// compiles and runs.
func FuzzCompilePattern(f *testing.F) {
	for _, p := range []string{`^a.c$`, `[\s\d-]+`, `(?<y>\d{4})`, `\u00e9|\x41`, `[[]`, `a{2,3}?`, `(?=x)`} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		re, ok := toolschema.CompilePattern(p)
		if ok {
			_ = re.MatchString("sample \r\n\u2028 text 123")
		}
	})
}

// esEscape writes s as an ECMAScript pattern literal: every syntax character
// escaped, every other character as it is (or \uHHHH).
func esEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case strings.ContainsRune(`^$\.*+?()[]{}|/`, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// A literal pattern matches exactly its text: escaping, \uHHHH and the
// class-free translation never change what a literal means.
func TestALiteralPatternMatchesExactlyItsText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOfN(rapid.RuneFrom([]rune("ab.*+?()[]{}|/^$\\-\t\n\x01é€ z09")), 0, 12, -1).Draw(t, "s")
		other := rapid.StringOfN(rapid.RuneFrom([]rune("ab.\\\n€")), 0, 12, -1).Draw(t, "other")
		re, ok := toolschema.CompilePattern("^" + esEscape(s) + "$")
		if !ok {
			t.Fatalf("a literal pattern was refused: %q", esEscape(s))
		}
		if !re.MatchString(s) {
			t.Fatalf("%q does not match its own literal", s)
		}
		if other != s && re.MatchString(other) {
			t.Fatalf("%q matches the literal of %q", other, s)
		}
	})
}

// TestFormatsRefuseWhatTheirRuleExcludes: the edges of the uri and uuid rules
// (docs/STRUCTURED-OUTPUT.md, "Formats").
func TestFormatsRefuseWhatTheirRuleExcludes(t *testing.T) {
	is := is.New(t)
	for _, c := range []struct {
		format, value string
		ok            bool
	}{
		{"uri", "https://example.com/a%20b", true},
		{"uri", "https://example.com/a b", false}, // a space, which net/url accepts in a path
		{"uri", "https://example.com/a\tb", false},
		{"uri", "https://example.com/a\x7fb", false},
		{"uuid", "123e4567-e89b-12d3-a456-426614174000", true},
		{"uuid", "123e4567-e89b-12d3-a456-426614174000x", false}, // trailing text after the last group
		{"uuid", "123e4567-e89b-12d3-a456-4266141740001", false}, // a thirteenth digit
		{"uuid", "x123e4567-e89b-12d3-a456-426614174000", false}, // leading text
	} {
		ok, known := toolschema.CheckFormat(c.format, c.value)
		is.True(known)
		if ok != c.ok {
			t.Errorf("CheckFormat(%s, %q) = %v, want %v", c.format, c.value, ok, c.ok)
		}
	}
}

// TestStrictSchemasCloseEveryObject: under strict, additionalProperties must
// be false (true is refused as absent is), on every object schema, those
// inside array items included.
func TestStrictSchemasCloseEveryObject(t *testing.T) {
	is := is.New(t)
	closed := `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`
	is.NoErr(toolschema.CheckStrict([]byte(closed), "s"))
	is.NoErr(toolschema.CheckStrict([]byte(`{"type":"object","properties":{"l":{"type":"array","items":`+closed+`}},"required":["l"],"additionalProperties":false}`), "s"))
	for schema, path := range map[string]string{
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":true}`:                                                                                             "s.additionalProperties",
		`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}},"required":["l"],"additionalProperties":false}`:             "s.properties.l.items.additionalProperties",
		`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}}},"required":["l"],"additionalProperties":false}`: "s.properties.l.items.required",
	} {
		err := toolschema.CheckStrict([]byte(schema), "s")
		var pr *toolschema.Problem
		is.True(errors.As(err, &pr)) // refused
		is.Equal(pr.Path, path)      // at the keyword that breaks the rule
	}
}
