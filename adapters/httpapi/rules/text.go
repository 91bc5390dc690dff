package rules

import (
	"strconv"
	"unicode/utf8"

	"github.com/pmgate/pmgate/domain/jsonlex"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// CheckText refuses a request body whose strings are not valid Unicode text:
// raw bytes that are not UTF-8, or a \u escape of a UTF-16 surrogate that is
// not part of a high+low pair (a lone surrogate). encoding/json would replace
// either with U+FFFD without a word, so the upstream would receive text the
// client never wrote. The refusal is invalid_request naming the path of the
// string (or of the object holding the key), e.g. messages[0].content.
//
// body must already be valid JSON (json.Valid accepted it).
func CheckText(body []byte) error {
	if validText(body) {
		return nil
	}
	w := textWalker{b: body}
	w.value("")
	return w.err
}

type textWalker struct {
	b   []byte
	i   int
	err error
}

func (w *textWalker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// value walks one JSON value at w.i whose path is p.
func (w *textWalker) value(p string) {
	w.ws()
	if w.err != nil || w.i >= len(w.b) {
		return
	}
	switch w.b[w.i] {
	case '{':
		w.i++
		for w.err == nil {
			w.ws()
			if w.b[w.i] == '}' {
				w.i++
				return
			}
			if w.b[w.i] == ',' {
				w.i++
				w.ws()
			}
			key, ok := w.readString()
			if !ok {
				w.fail(p, "has an object key that is not valid UTF-8 text.")
				return
			}
			w.ws()
			w.i++ // ':'
			w.value(p + toolschema.PathSegment(key))
		}
	case '[':
		w.i++
		for n := 0; w.err == nil; n++ {
			w.ws()
			if w.b[w.i] == ']' {
				w.i++
				return
			}
			if w.b[w.i] == ',' {
				w.i++
			}
			w.value(p + "[" + strconv.Itoa(n) + "]")
		}
	case '"':
		if _, ok := w.readString(); !ok {
			w.fail(p, "is not valid UTF-8 text (invalid bytes or a lone surrogate).")
		}
	default: // number, true, false, null
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			w.i++
		}
	}
}

func (w *textWalker) fail(p, detail string) {
	if p == "" {
		w.err = Invalid("", "The body "+detail)
		return
	}
	w.err = Invalid(trimDot(p), detail)
}

func trimDot(p string) string {
	if p != "" && p[0] == '.' {
		return p[1:]
	}
	return p
}

// readString reads the string at w.i (an opening quote) and returns its decoded form
// and whether it is valid text. Only keys need the decoded form.
func (w *textWalker) readString() (string, bool) {
	w.i++ // opening quote
	start := w.i
	ok := true
	var out []byte
	plain := true
	for w.i < len(w.b) {
		c := w.b[w.i]
		switch {
		case c == '"':
			s := string(w.b[start:w.i])
			if !plain {
				s = string(out)
			}
			w.i++
			return s, ok
		case c == '\\':
			if plain {
				out, plain = append(out, w.b[start:w.i]...), false
			}
			w.i++
			if b, simple := jsonlex.Escape(w.b[w.i]); simple {
				out = append(out, b)
				w.i++
				continue
			}
			r, _ := jsonlex.Hex4(w.b, w.i+1) // the body is valid JSON
			w.i += 5
			switch {
			case jsonlex.IsHigh(r): // a low surrogate must follow
				if w.i+6 <= len(w.b) && w.b[w.i] == '\\' && w.b[w.i+1] == 'u' {
					lo, _ := jsonlex.Hex4(w.b, w.i+2)
					if p, paired := jsonlex.Pair(r, lo); paired {
						w.i += 6
						out = utf8.AppendRune(out, p)
						continue
					}
				}
				ok = false
			case jsonlex.IsLow(r): // low surrogate without a high one
				ok = false
			default:
				out = utf8.AppendRune(out, r)
			}
		case c < utf8.RuneSelf:
			if !plain {
				out = append(out, c)
			}
			w.i++
		default:
			r, n := utf8.DecodeRune(w.b[w.i:])
			if r == utf8.RuneError && n <= 1 {
				ok = false
			}
			if !plain {
				out = append(out, w.b[w.i:w.i+n]...)
			}
			w.i += n
		}
	}
	return "", false
}
