// Package jsonlex holds the lexical primitives of a JSON string that every
// JSON reader of the gateway shares: the four hex digits of a \u escape, the
// one-character escapes, the UTF-16 surrogate pair, and the decoding of a
// string's content as encoding/json decodes it.
//
// The readers keep their own value models and their own answer to a lone
// surrogate, each documented where it is read: domain/toolschema and the
// upstream scanner (adapters/postman) decode it to U+FFFD as encoding/json
// does (Unquote), except that toolschema refuses a structured answer that
// holds one (Decode reports it: clients decode it differently);
// domain/canon refuses it (a canonical form must round-trip); the ingress's
// text walker (adapters/httpapi) marks the text invalid.
//
// The package is pure.
package jsonlex

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Text is the byte sequences the primitives read.
type Text interface{ string | []byte }

// Hex4 decodes the four hex digits at s[i:i+4]; ok is false when there are
// fewer than four or one is not a hex digit.
func Hex4[T Text](s T, i int) (r rune, ok bool) {
	if i < 0 || i+4 > len(s) {
		return 0, false
	}
	for j := i; j < i+4; j++ {
		c := s[j]
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

// Escape is the byte the one-character escape \c stands for; ok is false for
// 'u' (Hex4 reads its digits) and for every byte that is no escape.
func Escape(c byte) (b byte, ok bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// IsHigh reports whether r is a high (leading) surrogate, IsLow a low
// (trailing) one.
func IsHigh(r rune) bool { return r >= 0xD800 && r < 0xDC00 }

// IsLow reports whether r is a low (trailing) surrogate.
func IsLow(r rune) bool { return r >= 0xDC00 && r < 0xE000 }

// Pair is the code point of the surrogate pair hi, lo; ok is false when they
// are not a high and a low surrogate.
func Pair(hi, lo rune) (rune, bool) {
	if !IsHigh(hi) || !IsLow(lo) {
		return utf8.RuneError, false
	}
	return utf16.DecodeRune(hi, lo), true
}

// Unquote appends to dst the decoded content of a JSON string (raw is what
// lies between the quotes), as encoding/json decodes it: a lone surrogate
// escape, and every byte that is not part of valid UTF-8, become U+FFFD.
// ok is false when raw holds an unescaped quote or control byte, or a
// malformed escape.
func Unquote[T Text](dst []byte, raw T) (out []byte, ok bool) {
	out, ok, _ = Decode(dst, raw)
	return out, ok
}

// Decode is Unquote that also reports whether raw held a lone surrogate
// escape (decoded, like Unquote, as U+FFFD), for a reader that must refuse
// one: JSON's grammar allows it, but clients do not agree on its meaning
// (encoding/json and Python's json read U+FFFD or a lone surrogate code
// point, JavaScript's JSON.parse a lone UTF-16 code unit).
func Decode[T Text](dst []byte, raw T) (out []byte, ok, lone bool) {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '"' || c < 0x20:
			return dst, false, lone
		case c == '\\':
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
			continue
		default:
			r, n := decodeRune(raw, i)
			dst = utf8.AppendRune(dst, r) // RuneError for an invalid byte (n == 1)
			i += n
			continue
		}
		if i+1 >= len(raw) {
			return dst, false, lone
		}
		if b, ok := Escape(raw[i+1]); ok {
			dst = append(dst, b)
			i += 2
			continue
		}
		if raw[i+1] != 'u' {
			return dst, false, lone
		}
		r, ok := Hex4(raw, i+2)
		if !ok {
			return dst, false, lone
		}
		i += 6
		if utf16.IsSurrogate(r) {
			lo, ok := rune(0), false
			if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
				lo, ok = Hex4(raw, i+2)
				if !ok {
					return dst, false, lone
				}
			}
			if p, paired := Pair(r, lo); ok && paired {
				r = p
				i += 6
			} else {
				r = utf8.RuneError // a lone surrogate; a second escape stands alone
				lone = true
			}
		}
		dst = utf8.AppendRune(dst, r)
	}
	return dst, true, lone
}

// decodeRune decodes the rune at s[i]: the conversion of at most UTFMax bytes
// does not escape, so it allocates nothing.
func decodeRune[T Text](s T, i int) (rune, int) {
	return utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
}
