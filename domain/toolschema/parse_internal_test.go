package toolschema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func decodeStd(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errSyntax
	}
	return v, nil
}

// FuzzParseAgreesWithEncodingJSON: the schema parser accepts exactly the
// JSON texts encoding/json accepts (less those that repeat a key), reads the
// same values, and its compact output is valid JSON of the same value with
// the size it computed.
func FuzzParseAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e+3,true,false,null,"x\u00e9\ud83d\ude00\n"]}`, `"\ud800"`, `"\ud800\u0041"`, `[]`, `{}`, ` 0 `, `-0.0E-0`,
		`{"a":1,"a":2}`, `[1,]`, `01`, `"\x"`, "\"\xff\"", `{"k":"<&>\u2028"}`, `1 2`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		n, err := parse(raw)
		std, stdErr := decodeStd(raw)
		if err == errDuplicateKey {
			return // encoding/json keeps the last value; the gateway refuses
		}
		if (err == nil) != (stdErr == nil && json.Valid(raw)) {
			t.Fatalf("parse %v, encoding/json %v for %q", err, stdErr, raw)
		}
		if err != nil {
			return
		}
		out := encode(n)
		if len(out) != n.size {
			t.Fatalf("size %d, encoded %d bytes", n.size, len(out))
		}
		again, err := decodeStd(out)
		if err != nil || !reflect.DeepEqual(again, std) {
			t.Fatalf("value changed: %q -> %q", raw, out)
		}
	})
}

func TestLargeObjectsAreIndexedAndRefuseRepeatedKeys(t *testing.T) {
	big := `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9`
	n, err := parse([]byte(big + `}`))
	if err != nil || n.idx == nil || n.get("k9").s != "9" || n.get("k0").s != "0" || n.get("x") != nil {
		t.Fatalf("large object lookups: %v", err)
	}
	for _, dup := range []string{`,"k0":1}`, `,"k9":1}`, `,"k10":1,"k10":2}`} {
		if _, err := parse([]byte(big + dup)); err != errDuplicateKey {
			t.Fatalf("%s: got %v, want a duplicate key", dup, err)
		}
	}
}
