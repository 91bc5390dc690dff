package canon_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"pmgate/domain/canon"
	"pmgate/domain/errs"
)

// toStdlib converts a canon value to what encoding/json decodes with UseNumber.
func toStdlib(v canon.Value) any {
	switch x := v.(type) {
	case canon.Number:
		return json.Number(x)
	case []canon.Value:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toStdlib(e)
		}
		return out
	case map[string]canon.Value:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toStdlib(e)
		}
		return out
	default:
		return v
	}
}

func FuzzParseMarshal(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c.input))
	}
	for _, s := range []string{
		``, `{"a":[1,{"b":null}],"c":"\u00e9\ud83d\ude00"}`, `[[[[[]]]]]`, `{"":{"":{"":""}}}`, "\"\xff\"",
		`"\ud800\udc00"`, `-0.0e-0`, `[1e999999999]`, `{"a":1,"a":1}`, "[1,\n2]\n", `"\u0000"`, `{"k":"v"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := canon.ParseJSON(in)
		if err != nil {
			if !errs.Has(err, errs.InvalidRequest) {
				t.Fatalf("ParseJSON error without invalid_request: %v", err)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("ParseJSON accepted a text encoding/json calls invalid: %q", in)
		}
		var std any
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		if err := dec.Decode(&std); err != nil {
			t.Fatalf("encoding/json could not decode an accepted text %q: %v", in, err)
		}
		if !reflect.DeepEqual(std, toStdlib(v)) {
			t.Fatalf("ParseJSON and encoding/json disagree on %q:\n%#v\n%#v", in, v, std)
		}
		out1, err := canon.Marshal(v)
		if err != nil {
			t.Fatalf("Marshal refused a parsed value of %q: %v", in, err)
		}
		v2, err := canon.ParseJSON(out1)
		if err != nil {
			t.Fatalf("ParseJSON refused canonical bytes %q: %v", out1, err)
		}
		if !reflect.DeepEqual(v, v2) {
			t.Fatalf("canonical bytes %q parse to a different value", out1)
		}
		out2, err := canon.Marshal(v2)
		if err != nil || !bytes.Equal(out1, out2) {
			t.Fatalf("not a fixed point: %q -> %q (%v)", out1, out2, err)
		}
	})
}
