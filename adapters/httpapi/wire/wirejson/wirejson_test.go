package wirejson_test

import (
	"testing"

	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
)

type part struct {
	Type wirejson.String `json:"type"`
	Text wirejson.String `json:"text"`
}

type doc struct {
	A     wirejson.Array[wirejson.Object[part]] `json:"a"`
	Other map[string]wirejson.Raw               `json:",unknown"`
}

// The path of a repeated name says which steps are array indices, also below
// a member kept as sent (Raw) or not named by the type at all.
func TestDuplicateNameGivesThePathWithItsIndices(t *testing.T) {
	is := is.New(t)
	for body, want := range map[string][]wirejson.Step{
		`{"a":[{"type":"x"},{"type":"x","type":"y"}]}`: {{Name: "a"}, {Name: "1", Index: true}, {Name: "type"}},
		`{"z":[[1],[{"0":1,"0":2}]]}`:                  {{Name: "z"}, {Name: "1", Index: true}, {Name: "0", Index: true}, {Name: "0"}},
		`{"a":[],"a":[]}`:                              {{Name: "a"}},
	} {
		var d doc
		err := wirejson.Decode([]byte(body), &d)
		is.True(err != nil)
		got, ok := wirejson.DuplicateName([]byte(body), err)
		is.True(ok)
		is.Equal(got, want)
	}
	var d doc
	_, ok := wirejson.DuplicateName(nil, wirejson.Decode([]byte(`{"a":`), &d))
	is.True(!ok) // not a repeat
	is.Equal(wirejson.Decode([]byte(` null`), &d), wirejson.ErrNotObject)
}

// A part of a body another reader accepted is read as that reader did: the
// last of two repeated names wins, whole.
func TestDecodePartKeepsTheLastOfARepeat(t *testing.T) {
	is := is.New(t)
	var d doc
	is.NoErr(wirejson.DecodePart([]byte(`{"a":[{"type":"x","text":"t"}],"a":[{"type":"y"}]}`), &d))
	is.Equal(len(d.A.Items), 1)
	is.Equal(d.A.Items[0].V.Type.V, "y")
	is.Equal(d.A.Items[0].V.Text.Kind, wirejson.Kind(0)) // not merged with the first
	l := wirejson.List[wirejson.Object[part]]{Raw: wirejson.Raw(`[{"type":"a","type":"b"},5]`)}
	items := l.Entries()
	is.Equal(len(items), 2)
	is.Equal(items[0].V.Type.V, "b")
	is.Equal(items[1].Kind, wirejson.Kind('0'))
}

// Every member records the kind it was sent with, whatever that is, and a
// string's value only when it is one.
func TestMembersRecordTheKindSent(t *testing.T) {
	values := map[string]wirejson.Kind{`null`: 'n', `true`: 't', `false`: 'f', `"s"`: '"', `-1.5e3`: '0', `{}`: '{', `[1]`: '['}
	var names []string
	for v := range values {
		names = append(names, v)
	}
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.SampledFrom(names).Draw(t, "value")
		var p part
		if err := wirejson.Decode([]byte(`{"type":`+v+`,"text":"x"}`), &p); err != nil {
			t.Fatal(err)
		}
		if p.Type.Kind != values[v] || p.Type.IsString() != (v == `"s"`) || (p.Type.V != "") != (v == `"s"`) || p.Text.V != "x" {
			t.Fatalf("%s read as %+v", v, p)
		}
		if r := wirejson.Raw(v); r.Kind() != values[v] {
			t.Fatalf("Raw %s: kind %c", v, r.Kind())
		}
	})
}

// DecodeAs, which every API's request is read with, reads one object into a
// new value and refuses anything else as Decode does.
func TestDecodeAsReadsOneObjectIntoANewValue(t *testing.T) {
	is := is.New(t)
	d, err := wirejson.DecodeAs[doc]([]byte(` {"a":[{"type":"x","text":"y"}],"b":1}`))
	is.NoErr(err)
	is.Equal(len(d.A.Items), 1)
	is.Equal(d.A.Items[0].V.Text.V, "y")
	is.Equal(string(d.Other["b"]), "1")
	for _, body := range []string{`null`, `[]`, ``, `"x"`} {
		_, err := wirejson.DecodeAs[doc]([]byte(body))
		is.Equal(err, wirejson.ErrNotObject)
	}
	_, err = wirejson.DecodeAs[doc]([]byte(`{"a":[],"a":[]}`))
	_, ok := wirejson.DuplicateName([]byte(`{"a":[],"a":[]}`), err)
	is.True(ok)
}

type settings struct {
	Fields map[string]wirejson.Value `json:",unknown"`
	Text   wirejson.Echoed[part]     `json:"text"`
}

// A Value keeps what the field policy reads: the kind as sent, a string's
// unescaped text, an integral number whatever its spelling, an array's
// elements and an object's size; an Echoed object also its members.
func TestValueReadsWhatThePolicyAsks(t *testing.T) {
	is := is.New(t)
	var s settings
	is.NoErr(wirejson.Decode([]byte(`{"s":"a\u00e9\"b","i":2.0,"e":1e3,"f":1.5,"big":9007199254740993,"huge":1e400,`+
		`"b":true,"n":null,"a":["text",1,[2]],"o":{"x":1,"y":{"z":2}},"text":{ "type" : "t" }}`), &s))
	v := s.Fields
	is.Equal(v["s"].Kind(), wirejson.Kind('"'))
	is.Equal(v["s"].Text(), "aé\"b")
	for name, want := range map[string]int64{"i": 2, "e": 1000, "big": 9007199254740993} {
		n, ok := v[name].Int()
		is.True(ok)
		is.Equal(n, want)
	}
	for _, name := range []string{"f", "huge", "s", "b", "n", "a", "absent"} {
		_, ok := v[name].Int()
		is.True(!ok) // not an integer
	}
	is.True(v["b"].IsTrue())
	is.True(!v["n"].IsTrue())
	is.Equal(v["n"].Kind(), wirejson.Kind('n'))
	is.Equal(v["absent"].Kind(), wirejson.Kind(0))
	items := v["a"].Items()
	is.Equal(len(items), 3)
	is.Equal(items[0].Text(), "text")
	is.Equal(items[1].Kind(), wirejson.Kind('0'))
	is.Equal(string(items[2].Raw), `[2]`)
	is.Equal(v["o"].Len(), 2)
	is.Equal(v["a"].Len(), 0)                        // not an object
	is.Equal(v["o"].Items(), nil)                    // not an array
	is.Equal(string(s.Text.Raw), `{ "type" : "t" }`) // echoed as sent
	is.Equal(s.Text.V.Type.V, "t")
}

// A repeated name inside a Value or an Echoed object is refused at its path
// like any other.
func TestValueRefusesARepeatedNameInside(t *testing.T) {
	is := is.New(t)
	for body, want := range map[string][]wirejson.Step{
		`{"m":{"k":1,"k":2}}`:              {{Name: "m"}, {Name: "k"}},
		`{"text":{"type":"a","type":"b"}}`: {{Name: "text"}, {Name: "type"}},
	} {
		var s settings
		err := wirejson.Decode([]byte(body), &s)
		got, ok := wirejson.DuplicateName([]byte(body), err)
		is.True(ok)
		is.Equal(got, want)
	}
}
