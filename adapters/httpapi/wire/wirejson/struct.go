package wirejson

import (
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Struct reads the object d is at into v, a struct of the wire packages, as
// json reads it by its tags, and faster: its members are found in a table
// made once per type from the tags (the tags are the one place a member's
// name is written), and each is read by its own type's reader directly. The
// struct types of the wire packages read themselves with it:
//
//	func (t *Tool) UnmarshalJSONFrom(d *jsontext.Decoder) error { return wirejson.Struct(d, t) }
//
// Every field is a member type of this package (or of a wire package) whose
// pointer reads itself (json.UnmarshalerFrom); the `json:",unknown"` field,
// if any, is a map type whose pointer reads a member by name (Fields,
// gemini.Unknown: MemberReader); other members are skipped. A struct that
// breaks this is a programming error, found when its table is made.
func Struct[T any](d *jsontext.Decoder, v *T) error {
	t := tableOf(reflect.TypeFor[T]())
	base := unsafe.Pointer(v)
	return Members(d, v, func(name []byte) error {
		if f, ok := t.members[string(name)]; ok {
			return at(f, base).UnmarshalJSONFrom(d)
		}
		if t.unknown != nil {
			return at(*t.unknown, base).ReadMember(d, name)
		}
		return d.SkipValue()
	})
}

// MemberReader is the `json:",unknown"` field of a wire struct: it reads
// the member called name (the decoder's memory, valid during the call only)
// as json reads a member the struct does not name into its unknown map.
type MemberReader interface {
	ReadMember(d *jsontext.Decoder, name []byte) error
}

// Fields are the members a struct does not name, by name, each as sent.
type Fields map[string]Value

// ReadMember reads the member called name into f: a repeat (where one is
// allowed) reads into the value read before.
func (f *Fields) ReadMember(d *jsontext.Decoder, name []byte) error {
	return ReadUnknown(d, (*map[string]Value)(f), name)
}

// structTable is where a struct type's members are: by name, and its
// unknown field.
type structTable struct {
	members map[string]field[json.UnmarshalerFrom]
	unknown *field[MemberReader]
}

type field[I any] struct {
	// reader is the field's type's reader (a json.UnmarshalerFrom or a
	// MemberReader) of a pointer made when the table was: at puts the
	// field's address in its place.
	reader I
	offset uintptr
}

// at is f's reader (I: its interface) of the field f of the struct at base.
// An interface value is a type word and a data word; the reader's dynamic
// type is a pointer type, whose data word is the pointer itself, so the
// field's address takes the place of the one the table was made with: the
// one method lookup was made with the table, not on every member.
func at[I any](f field[I], base unsafe.Pointer) I {
	r := f.reader
	(*[2]unsafe.Pointer)(unsafe.Pointer(&r))[1] = unsafe.Add(base, f.offset)
	return r
}

var tables sync.Map // reflect.Type → *structTable

var (
	unmarshalerFrom = reflect.TypeFor[json.UnmarshalerFrom]()
	memberReader    = reflect.TypeFor[MemberReader]()
)

func tableOf(t reflect.Type) *structTable {
	if st, ok := tables.Load(t); ok {
		return st.(*structTable)
	}
	st := &structTable{members: make(map[string]field[json.UnmarshalerFrom], t.NumField())}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		reader := reflect.New(sf.Type).Interface()
		switch {
		case name == "-" || !sf.IsExported():
		case opts == "unknown" && name == "":
			if !reflect.PointerTo(sf.Type).Implements(memberReader) {
				panic("wirejson: " + t.String() + "." + sf.Name + ": an unknown field that does not read a member by name")
			}
			st.unknown = &field[MemberReader]{reader.(MemberReader), sf.Offset}
		case sf.Anonymous || name == "" || opts != "":
			panic("wirejson: " + t.String() + "." + sf.Name + ": a field Struct does not read (embedded, untagged or with options)")
		case !reflect.PointerTo(sf.Type).Implements(unmarshalerFrom):
			panic("wirejson: " + t.String() + "." + sf.Name + ": a member type that does not read itself")
		default:
			st.members[name] = field[json.UnmarshalerFrom]{reader.(json.UnmarshalerFrom), sf.Offset}
		}
	}
	actual, _ := tables.LoadOrStore(t, st)
	return actual.(*structTable)
}
