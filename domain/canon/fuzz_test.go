package canon_test

import (
	"bytes"
	"encoding/json"
	"math/big"
	"reflect"
	"testing"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
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

// FuzzCanonicalNumber checks the spelling by value against exact rationals
// (for exponents big.Rat can hold) and that it is a fixed point.
func FuzzCanonicalNumber(f *testing.F) {
	for _, c := range numberCases {
		f.Add(c.input)
	}
	for _, s := range []string{"0", "-0.0", "1e-0", "10", "0.0001", "1.0e+01", "-9.990e-2", "01", "1e", "1e99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		c, ok := canon.CanonicalNumber(lit)
		if !ok {
			if v, err := canon.ParseJSON([]byte(lit)); err == nil && v == canon.Number(lit) {
				t.Fatalf("refused the JSON number %q", lit)
			}
			return
		}
		if cc, ok := canon.CanonicalNumber(c); !ok || cc != c {
			t.Fatalf("%q → %q → %q: not a fixed point", lit, c, cc)
		}
		if len(lit) > 64 {
			return // big.Rat would expand a huge exponent
		}
		a, okA := new(big.Rat).SetString(lit)
		b, okB := new(big.Rat).SetString(c)
		if okA && okB && a.Cmp(b) != 0 {
			t.Fatalf("%q → %q changed the value", lit, c)
		}
	})
}

// FuzzEchoHash checks that the prepared echo hash equals the whole-transcript
// hash for arbitrary echoed and issued argument strings, and never panics.
func FuzzEchoHash(f *testing.F) {
	for _, c := range echoCases {
		f.Add(c.issued, c.echo)
	}
	defaults, err := canon.ToolDefaults([]chat.Tool{{Name: "edit", Parameters: []byte(echoSchema)}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, issued, echo string) {
		msgs := []chat.Message{
			{Role: chat.RoleUser, Content: ptr("edit it")},
			{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: echoVectorID, Name: "edit", Arguments: echo}}},
		}
		calls := []canon.IssuedCall{{ID: echoVectorID, Name: "edit", Arguments: issued}}
		whole, err := canon.TranscriptHashV2(msgs, defaults, calls)
		e, perr := canon.PrepareEcho(msgs, defaults)
		if (err == nil) != (perr == nil) {
			t.Fatalf("whole %v, prepare %v", err, perr)
		}
		if err != nil {
			return
		}
		got, err := e.Hash(calls)
		if err != nil || got != whole {
			t.Fatalf("prepared %q (%v), whole %q", got, err, whole)
		}
		if issued == echo {
			admitted, err := canon.TranscriptHashV2(msgs, nil, nil)
			if _, isObj := mustValue(issued).(map[string]canon.Value); err == nil && isObj && admitted != whole {
				t.Fatalf("an identical echo of %q does not match", issued)
			}
		}
	})
}

func mustValue(s string) canon.Value {
	v, _ := canon.ArgumentsValue(s)
	return v
}
