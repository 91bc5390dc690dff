package wirejson_test

import (
	"reflect"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
)

// The leaf members read their value whole and take its kind from its first
// byte; these are the readers they replaced (peek at the kind, then read a
// token or skip the value), kept to compare them with.
type (
	refString wirejson.String
	refBool   wirejson.Bool
	refNumber wirejson.Number
	refTextOr wirejson.TextOr[wirejson.Raw]
)

func (s *refString) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	if s.Kind = d.PeekKind(); s.Kind != '"' {
		s.V = ""
		return d.SkipValue()
	}
	tok, err := d.ReadToken()
	s.V = tok.String()
	return err
}

func (b *refBool) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	b.Kind = d.PeekKind()
	b.V = b.Kind == 't'
	return d.SkipValue()
}

func (n *refNumber) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	if n.Kind = d.PeekKind(); n.Kind != '0' {
		n.Text = ""
		return d.SkipValue()
	}
	v, err := d.ReadValue()
	n.Text = string(v)
	return err
}

func (c *refTextOr) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	c.Text, c.Items = "", nil
	switch c.Kind = d.PeekKind(); c.Kind {
	case '"':
		tok, err := d.ReadToken()
		c.Text = tok.String()
		return err
	case '[':
		if _, err := d.ReadToken(); err != nil {
			return err
		}
		for d.PeekKind() != ']' {
			var it wirejson.Raw
			if err := json.UnmarshalDecode(d, &it); err != nil {
				return err
			}
			c.Items = append(c.Items, it)
		}
		_, err := d.ReadToken()
		return err
	}
	return d.SkipValue()
}

type leafDoc struct {
	S wirejson.String               `json:"s"`
	B wirejson.Bool                 `json:"b"`
	N wirejson.Number               `json:"n"`
	T wirejson.TextOr[wirejson.Raw] `json:"t"`
}

type refLeafDoc struct {
	S refString `json:"s"`
	B refBool   `json:"b"`
	N refNumber `json:"n"`
	T refTextOr `json:"t"`
}

// Each leaf member reads every value as the reader it replaced: the same
// kind and text, the same verdict, a repeat inside found at the same path.
func TestLeavesReadAsTheTokenReadersDid(t *testing.T) {
	names := []string{"s", "b", "n", "t", "a", "é"}
	rapid.Check(t, func(t *rapid.T) {
		body := []byte(object(t, names, names, 3))
		var got leafDoc
		var want refLeafDoc
		err := wirejson.Decode(body, &got)
		werr := wirejson.Decode(body, &want)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%s: error %v, before %v", body, err, werr)
		}
		if err == nil {
			same := got.S == wirejson.String(want.S) && got.B == wirejson.Bool(want.B) &&
				got.N == wirejson.Number(want.N) && reflect.DeepEqual(got.T, wirejson.TextOr[wirejson.Raw](want.T))
			if !same {
				t.Fatalf("%s: read as %+v, before %+v", body, got, want)
			}
		}
		gs, gok := wirejson.DuplicateName(body, err)
		ws, wok := wirejson.DuplicateName(body, werr)
		if gok != wok || !reflect.DeepEqual(gs, ws) {
			t.Fatalf("%s: repeat at %v (%v), before at %v (%v)", body, gs, err, ws, werr)
		}
	})
}
