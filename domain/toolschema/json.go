package toolschema

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/pmgate/pmgate/domain/jsonlex"
)

// kind is the JSON kind of a node.
type kind uint8

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

// node is a parsed JSON value that keeps the order of object members and the
// literal text of numbers, so that a lowered schema is sent with its
// properties in the caller's order and its numbers as written. Nodes are never
// mutated after construction: lowering builds new nodes and shares unchanged
// ones, which keeps an inlined $ref DAG linear in memory.
type node struct {
	k    kind
	b    bool
	s    string // string value, or the number literal
	arr  []*node
	obj  []member
	idx  map[string]int // key -> first position in obj, for large objects
	size int            // bytes of the compact serialization
}

// indexFrom is the member count from which an object gets a key index, so
// that lookups in a large object (a schema with thousands of properties, or
// arguments with thousands of keys) stay constant time.
const indexFrom = 8

type member struct {
	key string
	val *node
}

// get returns the value of key, or nil.
func (n *node) get(key string) *node {
	if n.idx != nil {
		if i, ok := n.idx[key]; ok {
			return n.obj[i].val
		}
		return nil
	}
	for _, m := range n.obj {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

func quotedLen(s string) int {
	if plain(s) {
		return len(s) + 2
	}
	return len(quote(s))
}

// plain reports whether s encodes as itself between quotes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func appendQuoted(b []byte, s string) []byte {
	if plain(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return append(b, quote(s)...)
}

// quote encodes s as a JSON string without HTML escaping.
func quote(s string) string {
	if plain(s) {
		return `"` + s + `"`
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

func newString(s string) *node { return &node{k: kString, s: s, size: quotedLen(s)} }

func newBool(v bool) *node {
	if v {
		return &node{k: kBool, b: true, size: 4}
	}
	return &node{k: kBool, size: 5}
}

func newArray(items []*node) *node {
	n := &node{k: kArray, arr: items, size: 2}
	for i, it := range items {
		if i > 0 {
			n.size++
		}
		n.size += it.size
	}
	return n
}

func newObject(ms []member) *node {
	n := &node{k: kObject, obj: ms, size: 2}
	if len(ms) >= indexFrom {
		n.idx = make(map[string]int, len(ms))
	}
	for i, m := range ms {
		if _, seen := n.idx[m.key]; n.idx != nil && !seen {
			n.idx[m.key] = i
		}
		if i > 0 {
			n.size++
		}
		n.size += quotedLen(m.key) + 1 + m.val.size
	}
	return n
}

// errDuplicateKey is returned by parse for an object that repeats a key: the
// meaning of such a schema depends on the parser, so it is refused.
var errDuplicateKey = &parseError{"an object repeats a key."}

var errSyntax = &parseError{"is not valid JSON."}

type parseError struct{ detail string }

func (e *parseError) Error() string { return "toolschema: " + e.detail }

// maxNesting bounds the nesting of arrays and objects parse accepts, as
// encoding/json does.
const maxNesting = 10000

// errLoneSurrogate is returned by parseAnswer for a string that holds a lone
// surrogate escape.
var errLoneSurrogate = &parseError{"a string holds a lone surrogate escape."}

// parse reads exactly one JSON value (RFC 8259; invalid UTF-8 and lone
// surrogate escapes become U+FFFD, as with encoding/json).
func parse(raw []byte) (*node, error) {
	n, _, err := parseLone(raw)
	return n, err
}

// parseAnswer is parse that refuses valid JSON with a lone surrogate escape
// in a string (errLoneSurrogate): a structured answer is shown to the client
// as its JSON text, and clients decode such an escape differently, so it
// would not be the value the schema accepted (docs/STRUCTURED-OUTPUT.md).
func parseAnswer(raw []byte) (*node, error) {
	n, lone, err := parseLone(raw)
	if err == nil && lone {
		return nil, errLoneSurrogate
	}
	return n, err
}

// parseLone is parse that also reports whether a string held a lone
// surrogate escape.
func parseLone(raw []byte) (*node, bool, error) {
	p := parser{s: raw}
	p.space()
	n, err := p.value(0)
	if err != nil {
		return nil, false, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, false, errSyntax
	}
	return n, p.lone, nil
}

type parser struct {
	s    []byte
	i    int
	lone bool // a string held a lone surrogate escape
}

func (p *parser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) literal(lit string) bool {
	if len(p.s)-p.i >= len(lit) && string(p.s[p.i:p.i+len(lit)]) == lit {
		p.i += len(lit)
		return true
	}
	return false
}

func (p *parser) value(depth int) (*node, error) {
	if p.i >= len(p.s) {
		return nil, errSyntax
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return newString(s), nil
	case c == 't' && p.literal("true"):
		return newBool(true), nil
	case c == 'f' && p.literal("false"):
		return newBool(false), nil
	case c == 'n' && p.literal("null"):
		return &node{k: kNull, size: 4}, nil
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, errSyntax
}

func (p *parser) object(depth int) (*node, error) {
	if depth > maxNesting {
		return nil, errSyntax
	}
	p.i++ // {
	var ms []member
	var seen map[string]bool // once the object is large
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return newObject(ms), nil
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, errSyntax
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if seen == nil && len(ms) >= indexFrom {
			seen = make(map[string]bool, 2*len(ms))
			for _, m := range ms {
				seen[m.key] = true
			}
		}
		if seen != nil {
			if seen[key] {
				return nil, errDuplicateKey
			}
			seen[key] = true
		} else {
			for _, m := range ms {
				if m.key == key {
					return nil, errDuplicateKey
				}
			}
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, errSyntax
		}
		p.i++
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		ms = append(ms, member{key, v})
		p.space()
		if p.i >= len(p.s) {
			return nil, errSyntax
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return newObject(ms), nil
		default:
			return nil, errSyntax
		}
	}
}

func (p *parser) array(depth int) (*node, error) {
	if depth > maxNesting {
		return nil, errSyntax
	}
	p.i++ // [
	var items []*node
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return newArray(items), nil
	}
	for {
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		p.space()
		if p.i >= len(p.s) {
			return nil, errSyntax
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return newArray(items), nil
		default:
			return nil, errSyntax
		}
	}
}

func (p *parser) number() (*node, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case digits() == 0:
		return nil, errSyntax
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, errSyntax
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, errSyntax
		}
	}
	lit := string(p.s[start:p.i])
	return &node{k: kNumber, s: lit, size: len(lit)}, nil
}

// str reads a string token; p.s[p.i] is the opening quote. A string decodes
// as encoding/json decodes it (jsonlex.Decode: a lone surrogate escape or a
// byte that is not UTF-8 becomes U+FFFD), so that a schema means here what it
// means to the client's own JSON library; plain ASCII without escapes is
// taken as it is. A lone surrogate escape sets p.lone.
func (p *parser) str() (string, error) {
	p.i++
	start := p.i
	plain := true
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			raw := p.s[start:p.i]
			p.i++
			if plain {
				return string(raw), nil
			}
			b, ok, lone := jsonlex.Decode(make([]byte, 0, len(raw)+8), raw)
			if !ok {
				return "", errSyntax
			}
			p.lone = p.lone || lone
			return string(b), nil
		case c == '\\':
			plain = false
			p.i++ // the escaped byte cannot close the string
		case c < 0x20:
			return "", errSyntax
		case c >= utf8.RuneSelf:
			plain = false
		}
		p.i++
	}
	return "", errSyntax
}

// appendJSON writes the compact serialization of n.
func appendJSON(b []byte, n *node) []byte {
	switch n.k {
	case kNull:
		return append(b, "null"...)
	case kBool:
		if n.b {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case kNumber:
		return append(b, n.s...)
	case kString:
		return appendQuoted(b, n.s)
	case kArray:
		b = append(b, '[')
		for i, it := range n.arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, it)
		}
		return append(b, ']')
	}
	b = append(b, '{')
	for i, m := range n.obj {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQuoted(b, m.key)
		b = append(b, ':')
		b = appendJSON(b, m.val)
	}
	return append(b, '}')
}

func encode(n *node) []byte { return appendJSON(make([]byte, 0, n.size), n) }
