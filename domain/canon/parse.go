package canon

import (
	"unicode/utf8"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/jsonlex"
)

// problem names what is wrong with a JSON text. It never contains input bytes,
// so it is safe for logs.
type problem string

// SafeValue marks problems as safe for logs.
func (problem) SafeValue() {}

// offset is a byte offset into the input; safe for logs.
type offset int

// SafeValue marks offsets as safe for logs.
func (offset) SafeValue() {}

const (
	probUTF8        problem = "input is not valid UTF-8"
	probEOF         problem = "unexpected end of input"
	probByte        problem = "unexpected byte"
	probTrailing    problem = "trailing data after the value"
	probDepth       problem = "nesting deeper than the limit"
	probDuplicate   problem = "duplicate object key"
	probControl     problem = "unescaped control character in string"
	probEscape      problem = "invalid escape sequence"
	probSurrogate   problem = "escape produces a lone UTF-16 surrogate"
	probNumber      problem = "invalid number"
	probUnterminate problem = "unterminated string"
)

// ParseJSON parses exactly one JSON text into the value model (package
// documentation, "Parsing"). Numbers become Number literals; invalid UTF-8,
// duplicate object keys, lone surrogate escapes, nesting deeper than MaxDepth and
// trailing data are refused with errs.InvalidRequest. Error messages name the
// problem and a byte offset, never the input.
func ParseJSON(b []byte) (Value, error) {
	if !utf8.Valid(b) {
		return nil, parseError(probUTF8, 0)
	}
	p := parser{s: string(b)}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return nil, parseError(probTrailing, p.i)
	}
	return v, nil
}

func parseError(p problem, at int) error {
	return errs.Newf(errs.InvalidRequest, "canon: invalid JSON: %s at offset %d", p, offset(at))
}

type parser struct {
	s string
	i int
}

func (p *parser) fail(pr problem) error { return parseError(pr, p.i) }

func (p *parser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value parses the value at p.i; depth is the number of enclosing containers.
func (p *parser) value(depth int) (Value, error) {
	if p.i >= len(p.s) {
		return nil, p.fail(probEOF)
	}
	switch c := p.s[p.i]; {
	case c == '{':
		if depth >= MaxDepth {
			return nil, p.fail(probDepth)
		}
		return p.object(depth + 1)
	case c == '[':
		if depth >= MaxDepth {
			return nil, p.fail(probDepth)
		}
		return p.array(depth + 1)
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || isDigit(c):
		end := scanNumber(p.s, p.i)
		if end < 0 {
			return nil, p.fail(probNumber)
		}
		n := Number(p.s[p.i:end])
		p.i = end
		return n, nil
	default:
		return nil, p.fail(probByte)
	}
}

func (p *parser) literal(lit string) error {
	if len(p.s)-p.i < len(lit) || p.s[p.i:p.i+len(lit)] != lit {
		return p.fail(probByte)
	}
	p.i += len(lit)
	return nil
}

func (p *parser) object(depth int) (Value, error) {
	p.i++ // '{'
	m := map[string]Value{}
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return m, nil
	}
	for {
		if p.i >= len(p.s) {
			return nil, p.fail(probEOF)
		}
		if p.s[p.i] != '"' {
			return nil, p.fail(probByte)
		}
		keyAt := p.i
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			return nil, parseError(probDuplicate, keyAt)
		}
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.fail(probEOF)
		}
		if p.s[p.i] != ':' {
			return nil, p.fail(probByte)
		}
		p.i++
		p.skipSpace()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		m[k] = v
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.fail(probEOF)
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.skipSpace()
		case '}':
			p.i++
			return m, nil
		default:
			return nil, p.fail(probByte)
		}
	}
}

func (p *parser) array(depth int) (Value, error) {
	p.i++ // '['
	a := []Value{}
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return a, nil
	}
	for {
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.skipSpace()
		if p.i >= len(p.s) {
			return nil, p.fail(probEOF)
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.skipSpace()
		case ']':
			p.i++
			return a, nil
		default:
			return nil, p.fail(probByte)
		}
	}
}

// str parses the string starting at p.i (a '"'). The input is already known to
// be valid UTF-8, so raw bytes are copied as they are.
func (p *parser) str() (string, error) {
	p.i++ // opening quote
	start := p.i
	// Fast path: no escapes.
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '"' {
			s := p.s[start:p.i]
			p.i++
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.fail(probControl)
		}
		p.i++
	}
	buf := []byte(p.s[start:p.i])
	for {
		if p.i >= len(p.s) {
			return "", p.fail(probUnterminate)
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(buf), nil
		case c < 0x20:
			return "", p.fail(probControl)
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		// Escape.
		if p.i+1 >= len(p.s) {
			return "", p.fail(probUnterminate)
		}
		e := p.s[p.i+1]
		if b, ok := jsonlex.Escape(e); ok {
			buf = append(buf, b)
			p.i += 2
			continue
		}
		if e != 'u' {
			return "", p.fail(probEscape)
		}
		r, ok := jsonlex.Hex4(p.s, p.i+2)
		if !ok {
			return "", p.fail(probEscape)
		}
		switch {
		case jsonlex.IsLow(r):
			return "", p.fail(probSurrogate)
		case jsonlex.IsHigh(r):
			at := p.i
			p.i += 6
			if p.i+1 >= len(p.s) || p.s[p.i] != '\\' || p.s[p.i+1] != 'u' {
				return "", parseError(probSurrogate, at)
			}
			lo, ok := jsonlex.Hex4(p.s, p.i+2)
			if !ok {
				return "", p.fail(probEscape)
			}
			if r, ok = jsonlex.Pair(r, lo); !ok {
				return "", parseError(probSurrogate, at)
			}
		}
		buf = utf8.AppendRune(buf, r)
		p.i += 6
	}
}
