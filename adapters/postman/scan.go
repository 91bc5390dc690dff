package postman

import (
	"unicode/utf8"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/jsonlex"
)

// This file is a small, allocation-free JSON scanner for the decoder's hot path.
// It validates exactly the grammar of RFC 8259 (strings must be valid UTF-8)
// and records, for one object at a time, the raw spans of its members. Values
// are decoded only when the decoder needs them.

// jkind is the kind of a JSON value.
type jkind uint8

const (
	kInvalid jkind = iota
	kString
	kNumber
	kObject
	kArray
	kTrue
	kFalse
	kNull
)

// member is one member of a JSON object: the raw key (between the quotes), whether
// the key holds escapes, the raw span of the value and its kind.
type member struct {
	key    []byte
	keyEsc bool
	val    []byte
	kind   jkind
}

// Scanner errors. They never leave the package: the decoder maps them to stable
// codes (errSyntax → upstream_malformed_event, errNotObject →
// upstream_unverified_event_shape).
var (
	errSyntax    = errors.New("postman: json syntax error")
	errNotObject = errors.New("postman: json value is not an object")
)

// maxDepth bounds nesting, so that a hostile line cannot exhaust the stack.
const maxDepth = 64

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// parseTopObject parses b, which must hold exactly one JSON value surrounded by
// optional whitespace, appending the members of that value to out[:0]. A valid
// value that is not an object gives errNotObject; anything else invalid gives
// errSyntax.
func parseTopObject(b []byte, out []member) ([]member, error) {
	out = out[:0]
	i := skipWS(b, 0)
	if i >= len(b) {
		return out, errSyntax
	}
	if b[i] != '{' {
		_, end, err := skipValue(b, i, 0)
		if err != nil || skipWS(b, end) != len(b) {
			return out, errSyntax
		}
		return out, errNotObject
	}
	end, out, err := parseObjectAt(b, i, 0, out)
	if err != nil {
		return out, err
	}
	if skipWS(b, end) != len(b) {
		return out, errSyntax
	}
	return out, nil
}

// parseObjectSpan parses the raw span of a value already validated as an object,
// appending its members to out[:0].
func parseObjectSpan(b []byte, out []member) ([]member, error) {
	_, out, err := parseObjectAt(b, 0, 0, out[:0])
	return out, err
}

// parseObjectAt parses the object starting at b[i] == '{' and returns the index
// after it, with its members appended to out.
func parseObjectAt(b []byte, i, depth int, out []member) (int, []member, error) {
	end, err := scanObject(b, i, depth, &out)
	return end, out, err
}

// scanObject validates the object starting at b[i] == '{' and returns the index
// after it; when out is not nil, the object's members are appended to *out.
func scanObject(b []byte, i, depth int, out *[]member) (int, error) {
	if depth >= maxDepth {
		return 0, errSyntax
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, errSyntax
		}
		end, esc, err := scanString(b, i)
		if err != nil {
			return 0, err
		}
		key := b[i+1 : end-1]
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, errSyntax
		}
		i = skipWS(b, i+1)
		kind, vend, err := skipValue(b, i, depth+1)
		if err != nil {
			return 0, err
		}
		if out != nil {
			*out = append(*out, member{key: key, keyEsc: esc, val: b[i:vend], kind: kind})
		}
		i = skipWS(b, vend)
		if i >= len(b) {
			return 0, errSyntax
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return 0, errSyntax
		}
	}
}

// skipValue validates the value starting at b[i] and returns its kind and the
// index after it.
func skipValue(b []byte, i, depth int) (jkind, int, error) {
	if i >= len(b) {
		return kInvalid, 0, errSyntax
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := scanString(b, i)
		return kString, end, err
	case c == '{':
		end, err := skipObject(b, i, depth)
		return kObject, end, err
	case c == '[':
		end, err := skipArray(b, i, depth)
		return kArray, end, err
	case c == 't':
		return literal(b, i, "true", kTrue)
	case c == 'f':
		return literal(b, i, "false", kFalse)
	case c == 'n':
		return literal(b, i, "null", kNull)
	case c == '-' || ('0' <= c && c <= '9'):
		end, err := scanNumber(b, i)
		return kNumber, end, err
	}
	return kInvalid, 0, errSyntax
}

func literal(b []byte, i int, lit string, k jkind) (jkind, int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return kInvalid, 0, errSyntax
	}
	return k, i + len(lit), nil
}

func skipObject(b []byte, i, depth int) (int, error) { return scanObject(b, i, depth, nil) }

func skipArray(b []byte, i, depth int) (int, error) { return scanArray(b, i, depth, nil) }

// forEachElement calls fn with the raw span and kind of every element of the
// array span b (already validated).
func forEachElement(b []byte, fn func(val []byte, kind jkind) error) error {
	_, err := scanArray(b, 0, 0, fn)
	return err
}

// scanArray validates the array starting at b[i] == '[' and returns the index
// after it; when fn is not nil it is called with the raw span and kind of every
// element, and an error it returns ends the scan.
func scanArray(b []byte, i, depth int, fn func(val []byte, kind jkind) error) (int, error) {
	if depth >= maxDepth {
		return 0, errSyntax
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		kind, vend, err := skipValue(b, i, depth+1)
		if err != nil {
			return 0, err
		}
		if fn != nil {
			if err := fn(b[i:vend], kind); err != nil {
				return 0, err
			}
		}
		i = skipWS(b, vend)
		if i >= len(b) {
			return 0, errSyntax
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return 0, errSyntax
		}
	}
}

// scanString validates the string starting at b[i] == '"' and returns the index
// after its closing quote and whether it holds escapes. Control bytes and
// invalid UTF-8 are syntax errors.
func scanString(b []byte, i int) (end int, esc bool, err error) {
	j := i + 1
	for j < len(b) {
		for j < len(b) && plainByte[b[j]] {
			j++
		}
		if j >= len(b) {
			break
		}
		c := b[j]
		switch {
		case c == '"':
			return j + 1, esc, nil
		case c == '\\':
			esc = true
			if j+1 >= len(b) {
				return 0, esc, errSyntax
			}
			if _, ok := jsonlex.Escape(b[j+1]); ok {
				j += 2
			} else if _, ok := jsonlex.Hex4(b, j+2); ok && b[j+1] == 'u' {
				j += 6
			} else {
				return 0, esc, errSyntax
			}
		case c < 0x20:
			return 0, esc, errSyntax
		case c < utf8.RuneSelf:
			j++
		default:
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size <= 1 {
				return 0, esc, errSyntax
			}
			j += size
		}
	}
	return 0, esc, errSyntax
}

// plainByte marks the bytes a JSON string may hold without a closer look: ASCII
// other than '"', '\\' and the control bytes.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func scanNumber(b []byte, i int) (int, error) {
	j := i
	if b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && '1' <= b[j] && b[j] <= '9':
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
	default:
		return 0, errSyntax
	}
	if j < len(b) && b[j] == '.' {
		j++
		start := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		if j == start {
			return 0, errSyntax
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		start := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		if j == start {
			return 0, errSyntax
		}
	}
	return j, nil
}

// strContent returns the raw content of a validated string span (without quotes).
func strContent(span []byte) []byte { return span[1 : len(span)-1] }

// unquote decodes the raw content of a validated JSON string. Without escapes it
// returns raw itself; otherwise it decodes into buf (reused) and returns it. A
// lone surrogate escape decodes to U+FFFD, as encoding/json does
// (jsonlex.Unquote).
func unquote(raw []byte, esc bool, buf []byte) []byte {
	if !esc {
		return raw
	}
	out, _ := jsonlex.Unquote(buf[:0], raw) // scanString validated raw
	return out
}

// parseUint parses a validated JSON number span as a non-negative integer of at
// most 2^53; ok is false for a sign, a fraction, an exponent or a larger value.
func parseUint(span []byte) (v int64, ok bool) {
	if len(span) == 0 || len(span) > 16 {
		return 0, false
	}
	for _, c := range span {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, v <= 1<<53
}
