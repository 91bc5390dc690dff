// Package wirejson holds what every API's wire package (wire/chat,
// wire/responses, wire/messages, wire/gemini) reads a request body with: member types that record the
// JSON kind they were sent with, and the one strict decode.
//
// The body is read once, by github.com/go-json-experiment/json (the code of
// Go's encoding/json/v2; go1.26's own encoding/json/v2 still needs
// GOEXPERIMENT=jsonv2). Its defaults are the strictness wanted here: member
// names match exactly (never case-folded), a member name repeated in one
// object is an error (DuplicateName finds its path), and text that is not
// valid UTF-8 (raw bytes or a lone surrogate escape) is an error. Members a
// type does not name are skipped, so that newer clients' harmless additions
// keep working, or kept by name as Values where a request type lists its
// other members for the ingress's field policy (chat's and Responses'
// Fields). The wire packages' structs read themselves member by member
// (Struct, over Members), with the same rules, which are its decoder's
// (jsontext), and the member types read their values from it directly:
// json's own reading of a struct cost more than the members it read.
//
// A member of the wrong kind is not a decode error: every field records the
// kind it was sent with (Kind, 0 when absent), and the ingress refuses it in
// its fixed order with the API's wording, so that a request with two wrong
// fields is refused for the same one whatever order its members were sent in.
package wirejson

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"sync"
	"unsafe"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Kind is the JSON kind a member was sent with: 'n' (null), 't' and 'f'
// (booleans), '"' (string), '0' (number), '{' (object), '[' (array), or 0 when
// the member is absent.
type Kind = jsontext.Kind

// Absent says whether an optional member is missing or null (null means
// absent everywhere in these APIs).
func Absent(k Kind) bool { return k == 0 || k == 'n' }

// String is a member that should be a string.
type String struct {
	Kind Kind
	V    string // when Kind is '"'
}

// IsString says whether the member was sent as a string.
func (s String) IsString() bool { return s.Kind == '"' }

// The leaf members read their value whole (ReadValue) and take its kind
// from its first byte: the decoder checks it as it would a token, with less
// work than peeking at its kind first and reading it as a token.

func (s *String) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	v, err := d.ReadValue()
	s.Kind, s.V = Raw(v).Kind(), ""
	if s.Kind == '"' {
		s.V = unquote(v)
	}
	return err
}

// unquote is the text of v, a string the decoder has read, so valid.
func unquote(v []byte) string {
	if t := v[1 : len(v)-1]; bytes.IndexByte(t, '\\') < 0 {
		return string(t)
	}
	t, _ := jsontext.AppendUnquote(make([]byte, 0, len(v)), v)
	if len(t) == 0 {
		return ""
	}
	return unsafe.String(&t[0], len(t)) // t is not kept elsewhere: one copy, as strings.Builder makes
}

// Bool is a member that should be a boolean.
type Bool struct {
	Kind Kind
	V    bool // when Kind is 't' or 'f'
}

// IsBool says whether the member was sent as a boolean.
func (b Bool) IsBool() bool { return b.Kind == 't' || b.Kind == 'f' }

func (b *Bool) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	v, err := d.ReadValue()
	b.Kind = Raw(v).Kind()
	b.V = b.Kind == 't'
	return err
}

// Number is a member that should be a number: its text as sent, which the
// ingress reads as it needs (an integral float is an integer there).
type Number struct {
	Kind Kind
	Text string // when Kind is '0'
}

func (n *Number) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	v, err := d.ReadValue()
	n.Kind, n.Text = Raw(v).Kind(), ""
	if n.Kind == '0' {
		n.Text = string(v)
	}
	return err
}

// Int reads the number as an integer: ok is false when it was sent as
// another kind or its value is not integral (1.5). An integral value written
// as a float (2.0, 1e3) is an integer, up to 2^53 where floats stop holding
// every integer.
func (n Number) Int() (int64, bool) {
	if n.Kind != '0' {
		return 0, false
	}
	return integer(n.Text)
}

func integer(text string) (int64, bool) {
	if i, err := strconv.ParseInt(text, 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// Value is a member read for the kind it was sent with, whatever it is: the
// members the ingress's shared field policy accepts and ignores, or refuses
// unless default (temperature, n, metadata, stop, …), whose rules differ by
// API only in which members they apply to. It keeps the bytes as sent (the
// Responses API echoes some); a string's text, an array's elements and an
// object's size are read from them only when asked, as few of these members
// are more than kind-checked.
type Value struct {
	Raw Raw // as sent; nil when absent
}

// Kind is the JSON kind of the value (0 when absent).
func (v Value) Kind() Kind { return v.Raw.Kind() }

func (v *Value) UnmarshalJSONFrom(d *jsontext.Decoder) error { return v.Raw.UnmarshalJSONFrom(d) }

// Text is a string's text ("" when the value is not a string). The bytes
// were checked when the request was read, so unquoting them cannot fail.
func (v Value) Text() string {
	if v.Kind() != '"' {
		return ""
	}
	return unquote(v.Raw)
}

// Int is Number.Int of the value.
func (v Value) Int() (int64, bool) {
	if v.Kind() != '0' {
		return 0, false
	}
	return integer(string(v.Raw))
}

// AsString is the value as a member that should be a string.
func (v Value) AsString() String { return String{Kind: v.Kind(), V: v.Text()} }

// IsTrue says whether the value is the boolean true.
func (v Value) IsTrue() bool { return v.Kind() == 't' }

// Items reads the elements of an array (nil when it is not one). The bytes
// were checked when the request was read, so reading them cannot fail.
func (v Value) Items() []Value {
	var items []Value
	if v.Kind() == '[' {
		p := partDecoder(v.Raw)
		_ = readItems(&p.Decoder, &items)
		p.put()
	}
	return items
}

// Len is the number of members of an object (0 when it is not one).
func (v Value) Len() int {
	if v.Kind() != '{' {
		return 0
	}
	p := partDecoder(v.Raw)
	defer p.put()
	d := &p.Decoder
	n := 0
	if _, err := d.ReadToken(); err != nil { // {
		return 0
	}
	for d.PeekKind() == '"' {
		if _, err := d.ReadToken(); err != nil || d.SkipValue() != nil {
			break
		}
		n++
	}
	return n
}

// Echoed is an object member read as T and kept as the bytes it was sent as
// (Value): the field policy checks its kind like any other member's, the
// ingress reads T, and the response object echoes the bytes.
type Echoed[T any] struct {
	Value
	V T // when Kind is '{'
}

// IsObject says whether the member was sent as an object.
func (e Echoed[T]) IsObject() bool { return e.Kind() == '{' }

func (e *Echoed[T]) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	var zero T
	e.V = zero
	if err := e.Value.UnmarshalJSONFrom(d); err != nil || e.Kind() != '{' {
		return err
	}
	// Read again from the bytes kept, as DecodePart reads them (a repeated
	// name in them was refused by d), by a decoder over them in place.
	p := partDecoder(e.Raw)
	defer p.put()
	return decodeInto(&p.Decoder, &e.V)
}

// Raw is a member kept as the bytes it was sent as (a JSON schema, a tool
// call's input, a field only the ingress's shared field policy reads); nil
// when absent.
type Raw []byte

// Kind is the JSON kind of the value.
func (r Raw) Kind() Kind {
	if len(r) == 0 {
		return 0
	}
	switch c := r[0]; c {
	case 'n', 't', 'f', '"', '{', '[':
		return Kind(c)
	}
	return '0'
}

func (r *Raw) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	v, err := d.ReadValue()
	*r = append((*r)[:0], v...) // v is the decoder's memory
	return err
}

// Object is a member that should be an object of type T.
type Object[T any] struct {
	Kind Kind
	V    T // when Kind is '{'
}

// IsObject says whether the member was sent as an object.
func (o Object[T]) IsObject() bool { return o.Kind == '{' }

func (o *Object[T]) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	var zero T
	o.V = zero // a repeat, where one is allowed, is read as itself
	if o.Kind = d.PeekKind(); o.Kind != '{' {
		return d.SkipValue()
	}
	return decodeInto(d, &o.V)
}

// Array is a member that should be an array of T.
type Array[T any] struct {
	Kind  Kind
	Items []T // when Kind is '['
}

// IsArray says whether the member was sent as an array.
func (a Array[T]) IsArray() bool { return a.Kind == '[' }

func (a *Array[T]) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	a.Items = nil
	if a.Kind = d.PeekKind(); a.Kind != '[' {
		return d.SkipValue()
	}
	return readItems(d, &a.Items)
}

func readItems[T any](d *jsontext.Decoder, items *[]T) error {
	if _, err := d.ReadToken(); err != nil { // [
		return err
	}
	for d.PeekKind() != ']' {
		// Read in place: a new T passed to the reader by address would be
		// one more allocation per element.
		*items = append(*items, *new(T))
		if err := decodeInto(d, &(*items)[len(*items)-1]); err != nil {
			*items = (*items)[:len(*items)-1]
			return err
		}
	}
	_, err := d.ReadToken() // ]
	return err
}

// decodeInto reads the next value of d into v: by v's own
// UnmarshalJSONFrom when it has one (every member type here), called
// directly, as json would call it but without its lookup of the method and
// checks around the call, which cost more than most members' reading; by
// json otherwise.
func decodeInto[T any](d *jsontext.Decoder, v *T) error {
	if u, ok := any(v).(json.UnmarshalerFrom); ok {
		return u.UnmarshalJSONFrom(d)
	}
	return json.UnmarshalDecode(d, v)
}

// TextOr is a member that is a string or an array of T (a message's content:
// text, or an array of parts or blocks).
type TextOr[T any] struct {
	Kind  Kind
	Text  string // when Kind is '"'
	Items []T    // when Kind is '['
}

func (c *TextOr[T]) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	c.Text, c.Items = "", nil
	switch c.Kind = d.PeekKind(); c.Kind {
	case '"':
		v, err := d.ReadValue()
		if err == nil {
			c.Text = unquote(v)
		}
		return err
	case '[':
		return readItems(d, &c.Items)
	}
	return d.SkipValue()
}

// TextPart is one part of a content array in the OpenAI APIs: its type,
// and the text a text part carries.
type TextPart struct {
	Type String `json:"type"`
	Text String `json:"text"`
}

func (p *TextPart) UnmarshalJSONFrom(d *jsontext.Decoder) error { return Struct(d, p) }

// Members reads the object d is at into v, member by member, as json reads
// an object into a struct: member reads the value of the member called name
// (the decoder's memory, valid during the call only), or skips it. The
// struct types of the wire packages read themselves with it (Struct, which
// finds each member's field in a table made from the tags), because json's
// own reading of a struct (a lookup of each member's field, then of the
// field's reader, then checks around the call) costs more than most of
// their members' reading.
//
// It keeps every rule of the strict decode, which are the decoder's: a
// repeated name is its error (unless its options allow it, as DecodePart's
// do), and so is text that is not valid UTF-8. Null reads as the zero T, and
// another kind than an object is an error, as they are to json. json's
// options for names (case-insensitive matching, refusing unknown members)
// do not reach it: the wire packages use neither.
func Members[T any](d *jsontext.Decoder, v *T, member func(name []byte) error) error {
	switch d.PeekKind() {
	case '{':
	case 'n':
		var zero T
		*v = zero
		return d.SkipValue()
	default:
		if err := d.SkipValue(); err != nil {
			return err
		}
		return errNotAnObject
	}
	if _, err := d.ReadToken(); err != nil { // {
		return err
	}
	for d.PeekKind() != '}' {
		quoted, err := d.ReadValue() // checked for repeats as ReadToken checks it, without making a string
		if err != nil {
			return err
		}
		name := quoted[1 : len(quoted)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			name, _ = jsontext.AppendUnquote(nil, quoted) // the decoder checked it
		}
		if err := member(name); err != nil {
			return err
		}
	}
	_, err := d.ReadToken() // }
	return err
}

var errNotAnObject = errors.New("the value is not a JSON object")

// ReadUnknown reads the member called name into fields, as json reads a
// member a struct does not name into its `json:",unknown"` map: a repeat
// (where one is allowed) reads into the value read before.
func ReadUnknown[V any, P interface {
	*V
	json.UnmarshalerFrom
}](d *jsontext.Decoder, fields *map[string]V, name []byte) error {
	if *fields == nil {
		*fields = make(map[string]V)
	}
	v := (*fields)[string(name)]
	err := P(&v).UnmarshalJSONFrom(d)
	(*fields)[string(name)] = v
	return err
}

// List is an array member kept as the bytes it was sent as (nil when
// absent), read into entries only when asked: the bytes of a tool set key
// the ingress's memory of translated tool sets, so that an agent's unchanged
// tools are read into entries only when they are not remembered.
type List[T any] struct {
	Raw Raw
}

// Kind is the JSON kind of the member.
func (l List[T]) Kind() Kind { return l.Raw.Kind() }

func (l *List[T]) UnmarshalJSONFrom(d *jsontext.Decoder) error { return l.Raw.UnmarshalJSONFrom(d) }

// Entries reads the entries of an array: nil when it is not one. The bytes
// were checked when the request was read (text, names), so reading them
// cannot fail.
func (l List[T]) Entries() []T {
	var items []T
	if l.Kind() == '[' {
		p := partDecoder(l.Raw)
		_ = readItems(&p.Decoder, &items)
		p.put()
	}
	return items
}

// Decode reads body, which must be one JSON object, into v (a pointer to a
// request type). Its errors are the library's: a *jsontext.SyntacticError
// for text that is not JSON, not UTF-8 or repeats a member name
// (DuplicateName finds it), and a *json.SemanticError for a body that is not
// an object; ErrNotObject for null or a body of another kind.
func Decode(body []byte, v any) error {
	if i := bytes.IndexFunc(body, func(c rune) bool { return c != ' ' && c != '\t' && c != '\n' && c != '\r' }); i < 0 || body[i] != '{' {
		return ErrNotObject // null would otherwise read as an empty request
	}
	return json.Unmarshal(body, v)
}

// DecodeAs is Decode into a new T: each API's wire package reads its
// request type with it.
func DecodeAs[T any](body []byte) (T, error) {
	var v T
	err := Decode(body, &v)
	return v, err
}

// DecodePart reads raw, a part of a body another reader has already
// accepted as JSON text, into v. A repeated member name there is read as the
// other reader did: the last one wins.
func DecodePart(raw []byte, v any) error {
	return json.Unmarshal(raw, v, jsontext.AllowDuplicateNames(true))
}

// partDecoders holds decoders for parts of a body already read (Items, Len,
// Entries), so that reading one does not build a decoder and copy the part
// into its buffer: a decoder over a bytes.Buffer reads the part in place.
var partDecoders = sync.Pool{New: func() any { return new(pooledDecoder) }}

type pooledDecoder struct {
	jsontext.Decoder
	buf bytes.Buffer
}

// lenient is DecodePart's option: a part's repeated names were refused, or
// read as the last one wins, by the reader that accepted it.
var lenient = jsontext.AllowDuplicateNames(true)

func partDecoder(raw []byte) *pooledDecoder {
	p := partDecoders.Get().(*pooledDecoder)
	p.buf = *bytes.NewBuffer(raw)
	p.Reset(&p.buf, lenient)
	return p
}

// put returns p to the pool, no longer holding its part.
func (p *pooledDecoder) put() {
	p.buf = bytes.Buffer{}
	p.Reset(&p.buf)
	partDecoders.Put(p)
}

// ErrNotObject is Decode's error for a body that is not a JSON object.
var ErrNotObject = errors.New("the body is not a JSON object")

// Step is one step of the path to a member: a member name, or an index into
// an array.
type Step struct {
	Name  string
	Index bool // Name is an array index
}

// DuplicateName returns the path of the member whose name err (Decode's
// error for body) reports as repeated in its object.
func DuplicateName(body []byte, err error) ([]Step, bool) {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) || !errors.Is(se.Err, jsontext.ErrDuplicateName) {
		return nil, false
	}
	var path []Step
	d := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(true))
	descend := true // the containers before the repeat are found by walking to them
	for tok := range se.JSONPointer.Tokens() {
		step := Step{Name: tok}
		if descend {
			step.Index, descend = d.PeekKind() == '[', enter(d, tok)
		}
		path = append(path, step)
	}
	return path, true
}

// enter reads d into the member or element tok of the container it is at:
// false when it is not there (not seen: the reader found it).
func enter(d *jsontext.Decoder, tok string) bool {
	k := d.PeekKind()
	if _, err := d.ReadToken(); err != nil || (k != '{' && k != '[') {
		return false
	}
	if k == '[' {
		n, err := strconv.Atoi(tok)
		for ; err == nil && n > 0; n-- {
			err = d.SkipValue()
		}
		return err == nil && d.PeekKind() != ']'
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadToken()
		if err != nil {
			return false
		}
		if name.String() == tok {
			return true
		}
		if d.SkipValue() != nil {
			return false
		}
	}
	return false
}
