package toolschema

import (
	"net/mail"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// This file holds the assertions a tool schema only describes but the schema
// of a structured output has checked (Options.Validating): format, pattern
// and propertyNames; schema-valued additionalProperties is kept by
// checkAdditionalProperties.

// assertions are the keywords Options.Validating keeps, with their checks.
var assertions map[string]keywordCheck

func init() {
	assertions = map[string]keywordCheck{
		"format":        checkFormatKeyword,
		"pattern":       checkPatternKeyword,
		"propertyNames": checkPropertyNames,
	}
}

// Formats lists the format values the validator checks, in the order of
// docs/STRUCTURED-OUTPUT.md.
var Formats = []string{"email", "uri", "uuid", "date", "date-time", "ipv4", "ipv6"}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// CheckFormat reports whether s is valid for format; known is false for a
// format the validator does not check.
//
//   - email: one address as net/mail reads it (local@domain), with no display
//     name, angle brackets or comments;
//   - uri: an absolute URI (a scheme, then ':'), without spaces or control
//     characters;
//   - uuid: 8-4-4-4-12 hexadecimal digits, any version;
//   - date: an RFC 3339 full-date (2024-02-29);
//   - date-time: an RFC 3339 date-time with a time zone (2024-02-29T12:00:00Z,
//     fractions and offsets allowed; 'T' and 'Z' upper case);
//   - ipv4: a dotted quad without leading zeros;
//   - ipv6: an RFC 4291 address without a zone.
func CheckFormat(format, s string) (ok, known bool) {
	switch format {
	case "email":
		a, err := mail.ParseAddress(s)
		return err == nil && a.Name == "" && a.Address == s && !strings.ContainsAny(s, "<>() \t"), true
	case "uri":
		if strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
			return false, true
		}
		u, err := url.Parse(s)
		return err == nil && u.IsAbs(), true
	case "uuid":
		return uuidRE.MatchString(s), true
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil, true
	case "date-time":
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil && len(s) >= len("2006-01-02T15:04:05Z") && s[10] == 'T', true
	case "ipv4":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is4(), true
	case "ipv6":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is6() && a.Zone() == "", true
	}
	return false, false
}

func checkFormatKeyword(_ *lowerer, v *node, _ at, p string) (kwResult, error) {
	if v.k != kString {
		return kwResult{}, invalid(p, "must be a string.")
	}
	if _, known := CheckFormat(v.s, ""); !known {
		return kwResult{}, unsupported(p, "this format cannot be verified; the verified formats are "+strings.Join(Formats, ", ")+".")
	}
	return keep(v), nil
}

func checkPatternKeyword(_ *lowerer, v *node, _ at, p string) (kwResult, error) {
	if v.k != kString {
		return kwResult{}, invalid(p, "must be a string.")
	}
	if _, ok := CompilePattern(v.s); !ok {
		return kwResult{}, unsupported(p, "this regular expression may not mean the same in Go as in ECMAScript, so the answer could not be verified against it.")
	}
	return keep(v), nil
}

func checkPropertyNames(l *lowerer, v *node, a at, p string) (kwResult, error) {
	if v.k != kObject {
		return kwResult{}, unsupported(p, "boolean schemas are not supported; use an object schema.")
	}
	r, err := l.schema(v, a.sub(p))
	if err != nil {
		return kwResult{}, err
	}
	return kwResult{repl: r.n, height: r.height + 1}, nil
}

// maxPatternBytes bounds a pattern the validator compiles.
const maxPatternBytes = 4096

// esSpace is ECMAScript's \s: WhiteSpace and LineTerminator.
const esSpace = `\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}`

// CompilePattern translates an ECMAScript regular expression (as JSON Schema
// patterns are written, read with the u flag the way validators such as Ajv
// read them) into Go's RE2 syntax and compiles it. ok is false when the
// expression uses anything whose meaning could differ between the two, so a
// value Go accepts is exactly a value ECMAScript accepts:
//
//   - refused: backreferences (\1, \k<name>), lookahead and lookbehind,
//     inline flags and other (?…) groups, \p{…} and \P{…}, \cX, \u{…},
//     surrogate \uD800-\uDFFF, octal escapes, an escaped letter that has no
//     meaning in both, [] and [^], \S inside a class, characters beyond U+FFFF,
//     repetition counts over 1000, and whatever Go fails to compile;
//   - translated: . (any character but \n, \r, U+2028, U+2029), \s and \S
//     (ECMAScript's white space set), \uHHHH, \0, and a [ inside a class
//     (a literal in ECMAScript, a POSIX class opener in Go);
//   - the same in both: literals, escaped punctuation, \d \D \w \W \b \B,
//     \t \n \r \f \v \xHH, classes and ranges, groups (?:…) and (?<name>…),
//     alternation, anchors ^ and $ (no multiline flag), the quantifiers
//   - + ? {n} {n,} {n,m} and their lazy forms.
func CompilePattern(pattern string) (*regexp.Regexp, bool) {
	if len(pattern) > maxPatternBytes || !utf8.ValidString(pattern) {
		return nil, false
	}
	out, ok := translatePattern(pattern)
	if !ok {
		return nil, false
	}
	re, err := regexp.Compile(out)
	if err != nil {
		return nil, false
	}
	return re, true
}

func translatePattern(p string) (string, bool) {
	var b strings.Builder
	rs := []rune(p)
	inClass := false
	classStart := 0
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if r > 0xFFFF {
			return "", false
		}
		switch {
		case r == '\\':
			if i+1 >= len(rs) {
				return "", false
			}
			i++
			n, ok := translateEscape(rs, &i, inClass)
			if !ok {
				return "", false
			}
			b.WriteString(n)
		case inClass:
			switch r {
			case ']':
				if i == classStart {
					return "", false // [] or [^]: empty or any, spelled differently in Go
				}
				inClass = false
				b.WriteRune(r)
			case '[':
				b.WriteString(`\[`)
			default:
				b.WriteRune(r)
			}
		case r == '[':
			inClass = true
			b.WriteRune(r)
			if i+1 < len(rs) && rs[i+1] == '^' {
				i++
				b.WriteRune('^')
			}
			classStart = i + 1
		case r == '.':
			b.WriteString(`[^\n\r\x{2028}\x{2029}]`)
		case r == '(':
			if i+1 < len(rs) && rs[i+1] == '?' {
				switch {
				case i+2 < len(rs) && rs[i+2] == ':':
					b.WriteString("(?:")
					i += 2
				case i+3 < len(rs) && rs[i+2] == '<' && rs[i+3] != '=' && rs[i+3] != '!':
					b.WriteString("(?P<")
					i += 2
				default:
					return "", false // lookaround or inline flags
				}
				continue
			}
			b.WriteRune(r)
		case r == '{':
			j := i + 1
			for j < len(rs) && (rs[j] >= '0' && rs[j] <= '9' || rs[j] == ',') {
				j++
			}
			if j < len(rs) && rs[j] == '}' && j > i+1 {
				for _, part := range strings.Split(string(rs[i+1:j]), ",") {
					if n, err := strconv.Atoi(part); part != "" && (err != nil || n > 1000) {
						return "", false
					}
				}
				b.WriteString(string(rs[i : j+1]))
				i = j
				continue
			}
			return "", false // a literal brace in ECMAScript; refused rather than guessed
		case r == '}':
			return "", false
		default:
			b.WriteRune(r)
		}
	}
	if inClass {
		return "", false
	}
	return b.String(), true
}

// translateEscape translates the escape whose letter is rs[*i]; *i may move
// past further characters it consumed (\xHH, \uHHHH).
func translateEscape(rs []rune, i *int, inClass bool) (string, bool) {
	r := rs[*i]
	hex := func(n int) (rune, bool) {
		if *i+n >= len(rs) {
			return 0, false
		}
		v, err := strconv.ParseUint(string(rs[*i+1:*i+1+n]), 16, 32)
		if err != nil {
			return 0, false
		}
		*i += n
		return rune(v), true
	}
	switch r {
	case 'd', 'D', 'w', 'W', 't', 'n', 'r', 'f', 'v':
		return `\` + string(r), true
	case 'b', 'B':
		if inClass {
			return "", false // [\b] is a backspace in ECMAScript
		}
		return `\` + string(r), true
	case 's':
		if inClass {
			return esSpace, true
		}
		return "[" + esSpace + "]", true
	case 'S':
		if inClass {
			return "", false
		}
		return "[^" + esSpace + "]", true
	case '0':
		if *i+1 < len(rs) && rs[*i+1] >= '0' && rs[*i+1] <= '9' {
			return "", false
		}
		return `\x00`, true
	case 'x':
		v, ok := hex(2)
		if !ok {
			return "", false
		}
		return `\x{` + strconv.FormatInt(int64(v), 16) + `}`, true
	case 'u':
		if *i+1 < len(rs) && rs[*i+1] == '{' {
			return "", false
		}
		v, ok := hex(4)
		if !ok || v >= 0xD800 && v <= 0xDFFF {
			return "", false
		}
		return `\x{` + strconv.FormatInt(int64(v), 16) + `}`, true
	}
	if r < 0x80 && strings.ContainsRune(`^$\.*+?()[]{}|/-`, r) {
		return `\` + string(r), true
	}
	return "", false
}

// CheckStrict applies OpenAI's strict-mode rules for structured outputs to a
// schema lowered with Options.Validating (path names it, e.g.
// "response_format.json_schema.schema"): the root is an object schema, and
// every object schema lists each of its properties in required and has
// additionalProperties: false. A refusal is a *Problem (invalid_request).
func CheckStrict(checked []byte, path string) error {
	n, err := parse(checked)
	if err != nil || n.k != kObject {
		return invalid(path, "must be a JSON schema object.")
	}
	if t := n.get("type"); t == nil || t.k != kString || t.s != "object" {
		return invalid(path+".type", `must be "object" at the root of a strict schema.`)
	}
	return checkStrict(n, path, 0)
}

func checkStrict(n *node, path string, depth int) error {
	if n.k != kObject || depth > 2*MaxDepth {
		return nil
	}
	props := n.get("properties")
	isObject := props != nil
	if t := n.get("type"); t != nil {
		isObject = isObject || t.k == kString && t.s == "object"
		for _, it := range t.arr {
			isObject = isObject || it.s == "object"
		}
	}
	if isObject {
		if ap := n.get("additionalProperties"); ap == nil || ap.k != kBool || ap.b {
			return invalid(path+".additionalProperties", "must be false in a strict schema.")
		}
		required := map[string]bool{}
		if req := n.get("required"); req != nil {
			for _, r := range req.arr {
				required[r.s] = true
			}
		}
		if props != nil {
			for _, m := range props.obj {
				if !required[m.key] {
					return invalid(path+".required", "must list every property in a strict schema (make a property optional with a null type).")
				}
			}
		}
	}
	if props != nil {
		for _, m := range props.obj {
			if err := checkStrict(m.val, path+".properties"+PathSegment(m.key), depth+1); err != nil {
				return err
			}
		}
	}
	if items := n.get("items"); items != nil {
		if err := checkStrict(items, path+".items", depth+1); err != nil {
			return err
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if l := n.get(k); l != nil {
			for i, sub := range l.arr {
				if err := checkStrict(sub, path+"."+k+index(i), depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
