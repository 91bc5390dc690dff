package canon

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"unicode/utf8"

	"github.com/pmgate/pmgate/domain/errs"
)

// Version names the canonical serialization rules. It is part of every hash
// preimage; changing any rule of this package means a new Version.
const Version = "pmgate-canon-v1"

// MaxDepth is the deepest nesting of arrays and objects ParseJSON accepts.
const MaxDepth = 10000

// marshalDepth guards Marshal against cyclic or absurdly deep values built in
// code. It is larger than MaxDepth so that parsed values can be embedded in the
// chat-level documents.
const marshalDepth = 1 << 16

// Value is a JSON value of the canonical model: nil, bool, string, Number,
// []Value or map[string]Value. See the package documentation.
type Value = any

// Number is a JSON number kept as its exact literal text ("1.0" and "1" differ).
type Number string

// Marshal returns the canonical bytes of v (package documentation, rules 1–6).
//
// A string or key that is not valid UTF-8 is refused with errs.InvalidRequest
// (such data comes from a request). An unsupported dynamic type, a Number that
// is not a JSON number literal, or a cyclic/too deep value is a programming
// error and is refused with errs.InternalError.
func Marshal(v Value) ([]byte, error) {
	return appendValue(make([]byte, 0, 256), v, 0)
}

// Hash returns "sha256:" + lowercase hex(SHA-256(Version + "\n" + Marshal(v))).
func Hash(v Value) (string, error) {
	b := make([]byte, 0, 512)
	b = append(b, Version...)
	b = append(b, '\n')
	b, err := appendValue(b, v, 0)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func appendValue(b []byte, v Value, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		if x {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case string:
		return appendString(b, x)
	case Number:
		if !validNumber(string(x)) {
			return nil, errs.Newf(errs.InternalError, "canon: invalid number literal")
		}
		return append(b, x...), nil
	case []Value:
		if depth >= marshalDepth {
			return nil, errs.Newf(errs.InternalError, "canon: value nested too deeply or cyclic")
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]Value:
		if depth >= marshalDepth {
			return nil, errs.Newf(errs.InternalError, "canon: value nested too deeply or cyclic")
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // Go string order is UTF-8 byte order
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendString(b, k); err != nil {
				return nil, err
			}
			b = append(b, ':')
			if b, err = appendValue(b, x[k], depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	default:
		return nil, errs.Newf(errs.InternalError, "canon: unsupported dynamic type %T", v)
	}
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a canonical JSON string (package documentation, rule 3).
func appendString(b []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, errs.Newf(errs.InvalidRequest, "canon: string is not valid UTF-8")
	}
	b = append(b, '"')
	start := 0
	for i := 0; ; i++ {
		// To the next byte that needs escaping: eight bytes at a time while
		// none of them does (most text has long runs of plain bytes), then
		// byte by byte, at most seven.
		for i+8 <= len(s) && !escapeIn(le64(s, i)) {
			i += 8
		}
		for i < len(s) && plain(s[i]) {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"'), nil
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// escapeIn reports whether any of the eight bytes of x is one appendString
// escapes: below 0x20, a quote or a backslash. Each test is exact for "any
// byte": a byte's borrow can only spill into a higher byte after a byte that
// already matched.
func escapeIn(x uint64) bool {
	below := (x - ones*0x20) &^ x
	quote := x ^ (ones * '"')
	backslash := x ^ (ones * '\\')
	return (below|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0
}

// plain reports whether appendString writes c as it is.
func plain(c byte) bool { return c >= 0x20 && c != '"' && c != '\\' }

// le64 is the eight bytes of s at i, the first the lowest.
func le64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// validNumber reports whether s matches the JSON number grammar (RFC 8259 §6):
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(s string) bool {
	return scanNumber(s, 0) == len(s)
}

// scanNumber returns the end of the longest JSON number starting at i, or -1
// when no valid number starts there. A valid number that is followed by more
// bytes is not rejected here; the caller decides what may follow.
func scanNumber(s string, i int) int {
	n := len(s)
	if i < n && s[i] == '-' {
		i++
	}
	switch {
	case i < n && s[i] == '0':
		i++
	case i < n && s[i] >= '1' && s[i] <= '9':
		for i < n && isDigit(s[i]) {
			i++
		}
	default:
		return -1
	}
	if i < n && s[i] == '.' {
		i++
		if i >= n || !isDigit(s[i]) {
			return -1
		}
		for i < n && isDigit(s[i]) {
			i++
		}
	}
	if i < n && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < n && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= n || !isDigit(s[i]) {
			return -1
		}
		for i < n && isDigit(s[i]) {
			i++
		}
	}
	return i
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
