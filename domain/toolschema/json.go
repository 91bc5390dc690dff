package toolschema

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
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
	size int // bytes of the compact serialization
}

type member struct {
	key string
	val *node
}

// get returns the value of key, or nil.
func (n *node) get(key string) *node {
	for _, m := range n.obj {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

func quotedLen(s string) int { return len(quote(s)) }

// quote encodes s as a JSON string without HTML escaping.
func quote(s string) string {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
	}
	if plain {
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
	for i, m := range ms {
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

// parse reads exactly one JSON value.
func parse(raw []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errSyntax
	}
	return n, nil
}

func parseValue(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, errSyntax
	}
	switch t := tok.(type) {
	case nil:
		return &node{k: kNull, size: 4}, nil
	case bool:
		return newBool(t), nil
	case json.Number:
		return &node{k: kNumber, s: string(t), size: len(t)}, nil
	case string:
		return newString(t), nil
	case json.Delim:
		switch t {
		case '[':
			var items []*node
			for dec.More() {
				it, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				items = append(items, it)
			}
			if _, err := dec.Token(); err != nil {
				return nil, errSyntax
			}
			return newArray(items), nil
		case '{':
			var ms []member
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				key, ok := kt.(string)
				if err != nil || !ok {
					return nil, errSyntax
				}
				if seen[key] {
					return nil, errDuplicateKey
				}
				seen[key] = true
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				ms = append(ms, member{key, v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, errSyntax
			}
			return newObject(ms), nil
		}
	}
	return nil, errSyntax
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
		return append(b, quote(n.s)...)
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
		b = append(b, quote(m.key)...)
		b = append(b, ':')
		b = appendJSON(b, m.val)
	}
	return append(b, '}')
}

func encode(n *node) []byte { return appendJSON(make([]byte, 0, n.size), n) }
