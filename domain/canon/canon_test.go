package canon_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/errs"
)

// canonical parses text and returns its canonical bytes; the test fails on error.
func canonical(t *testing.T, text string) string {
	t.Helper()
	is := is.New(t)
	v, err := canon.ParseJSON([]byte(text))
	is.NoErr(err) // test input parses
	out, err := canon.Marshal(v)
	is.NoErr(err) // parsed value marshals
	return string(out)
}

func TestObjectKeyOrderDoesNotChangeTheBytes(t *testing.T) {
	is := is.New(t)
	a := canonical(t, `{"b":1,"a":{"y":2,"x":3},"c":[{"q":1,"p":2}]}`)
	b := canonical(t, `{"c":[{"p":2,"q":1}],"a":{"x":3,"y":2},"b":1}`)
	is.Equal(a, b)                                               // key order is irrelevant at every level
	is.Equal(a, `{"a":{"x":3,"y":2},"b":1,"c":[{"p":2,"q":1}]}`) // keys sorted at every level
}

func TestKeysSortByUTF8BytesWithoutCaseFolding(t *testing.T) {
	is := is.New(t)
	got := canonical(t, `{"b":0,"a":1,"B":2,"A":3,"ab":4,"":5,"é":6,"｡":7,"😀":8}`)
	// "" < "A" < "B" < "a" < "ab" < "b" < é (C3) < ｡ (EF) < 😀 (F0); UTF-16 order would put 😀 before ｡.
	is.Equal(got, `{"":5,"A":3,"B":2,"a":1,"ab":4,"b":0,"é":6,"｡":7,"😀":8}`) // byte-wise key order
}

func TestArrayOrderChangesTheBytes(t *testing.T) {
	is := is.New(t)
	a := canonical(t, `[1,2,{"a":[3,4]}]`)
	b := canonical(t, `[2,1,{"a":[3,4]}]`)
	c := canonical(t, `[1,2,{"a":[4,3]}]`)
	is.True(a != b) // top-level array order is kept
	is.True(a != c) // nested array order is kept
}

func TestMarshalWritesNoInsignificantWhitespace(t *testing.T) {
	is := is.New(t)
	got := canonical(t, " \t\r\n{ \"a\" : [ 1 ,\n 2 ] , \"b\" :\t{ } , \"c\" : [ ] , \"d\" : null }\n")
	is.Equal(got, `{"a":[1,2],"b":{},"c":[],"d":null}`) // whitespace only inside strings, explicit null kept
}

func TestStringEscapingIsTheFixedMinimalRule(t *testing.T) {
	is := is.New(t)
	s := "\" \\ \b \f \n \r \t \x00 \x01 \x1a \x1f \x7f / < > & \u2028 \u2029 é 😀"
	out, err := canon.Marshal(s)
	is.NoErr(err) // valid string marshals
	want := `"\" \\ \b \f \n \r \t \u0000 \u0001 \u001a \u001f ` + "\x7f / < > & \u2028 \u2029 é 😀\""
	is.Equal(string(out), want) // only " \ and bytes < 0x20 are escaped, hex in lowercase
}

func TestInputEscapeSpellingDoesNotMatter(t *testing.T) {
	is := is.New(t)
	a := canonical(t, `"\u00e9\u00E9\/\ud83d\ude00\u0041\u001F"`)
	b := canonical(t, `"éé/😀A\u001f"`)
	is.Equal(a, b)               // escapes are decoded before canonical serialization
	is.Equal(a, `"éé/😀A\u001f"`) // raw output, lowercase control escape
}

func TestNoUnicodeNormalizationIsApplied(t *testing.T) {
	is := is.New(t)
	nfc, err := canon.Marshal("\u00e9")
	is.NoErr(err) // NFC marshals
	nfd, err := canon.Marshal("e\u0301")
	is.NoErr(err)                          // NFD marshals
	is.Equal(nfc, []byte("\"\xc3\xa9\""))  // NFC bytes kept
	is.Equal(nfd, []byte("\"e\xcc\x81\"")) // NFD bytes kept
	is.True(!bytes.Equal(nfc, nfd))        // the two forms stay different
	hc, _ := canon.Hash("\u00e9")
	hd, _ := canon.Hash("e\u0301")
	is.True(hc != hd) // and hash differently
}

func TestNumbersKeepTheirLiteral(t *testing.T) {
	is := is.New(t)
	got := canonical(t, `[1,1.0,-0,0,1e3,1E3,1e+3,1000,-12.50e-01,123456789012345678901234567890]`)
	is.Equal(got, `[1,1.0,-0,0,1e3,1E3,1e+3,1000,-12.50e-01,123456789012345678901234567890]`) // literals byte for byte
	h1, _ := canon.Hash(canon.Number("1"))
	h2, _ := canon.Hash(canon.Number("1.0"))
	is.True(h1 != h2) // 1 and 1.0 are different values
}

func TestMarshalRefusesInvalidNumberLiterals(t *testing.T) {
	for _, n := range []string{"", "-", "01", "1.", ".5", "+1", "1e", "1e+", "0x10", "NaN", "Infinity", " 1", "1 ", "1_000"} {
		t.Run(n, func(t *testing.T) {
			is := is.New(t)
			_, err := canon.Marshal(canon.Number(n))
			is.True(err != nil)                        // not a JSON number literal
			is.True(errs.Has(err, errs.InternalError)) // a Number built in code is a programming error
		})
	}
}

func TestHashIsVersionedSHA256OfTheCanonicalBytes(t *testing.T) {
	is := is.New(t)
	v, err := canon.ParseJSON([]byte(`{"b":[true,false],"a":"x"}`))
	is.NoErr(err) // input parses
	got, err := canon.Hash(v)
	is.NoErr(err) // value hashes
	sum := sha256.Sum256([]byte("pmgate-canon-v1\n" + `{"a":"x","b":[true,false]}`))
	is.Equal(got, "sha256:"+hex.EncodeToString(sum[:])) // sha256 over version line and canonical bytes
	is.Equal(canon.Version, "pmgate-canon-v1")          // version string is the contract's
}

func TestNilSlicesAndMapsAreEmptyContainers(t *testing.T) {
	is := is.New(t)
	out, err := canon.Marshal(map[string]canon.Value{"a": []canon.Value(nil), "m": map[string]canon.Value(nil), "n": nil})
	is.NoErr(err)                                     // nil containers marshal
	is.Equal(string(out), `{"a":[],"m":{},"n":null}`) // only the untyped nil is null
}

func TestParseJSONRefusesInvalidUTF8(t *testing.T) {
	for name, in := range map[string]string{
		"in a string":          "\"a\xffb\"",
		"in a key":             "{\"k\xc3\":1}",
		"outside strings":      "[1,\xff]",
		"overlong encoding":    "\"\xc0\xaf\"",
		"encoded surrogate":    "\"\xed\xa0\x80\"",
		"truncated sequence":   "\"\xf0\x9f\x98\"",
		"beyond the last rune": "\"\xf4\x90\x80\x80\"",
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			_, err := canon.ParseJSON([]byte(in))
			is.True(errs.Has(err, errs.InvalidRequest)) // invalid UTF-8 is an invalid request
		})
	}
}

func TestMarshalRefusesInvalidUTF8InStringsAndKeys(t *testing.T) {
	for name, v := range map[string]canon.Value{
		"string":        "a\xffb",
		"key":           map[string]canon.Value{"k\xff": "v"},
		"nested string": []canon.Value{map[string]canon.Value{"a": []canon.Value{"\xed\xa0\x80"}}},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			_, err := canon.Marshal(v)
			is.True(errs.Has(err, errs.InvalidRequest)) // invalid UTF-8 is refused, not replaced
			_, err = canon.Hash(v)
			is.True(errs.Has(err, errs.InvalidRequest)) // Hash refuses it too
		})
	}
}

func TestParseJSONRefusesLoneSurrogateEscapes(t *testing.T) {
	for _, in := range []string{`"\ud800"`, `"\udc00"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ud83d\ud83d"`, `"\ude00\ud83d"`, `{"\udfff":1}`} {
		t.Run(in, func(t *testing.T) {
			is := is.New(t)
			_, err := canon.ParseJSON([]byte(in))
			is.True(errs.Has(err, errs.InvalidRequest)) // a lone surrogate has no UTF-8 form
		})
	}
}

func TestParseJSONRefusesDuplicateKeys(t *testing.T) {
	for _, in := range []string{`{"a":1,"a":1}`, `{"a":1,"b":2,"a":3}`, `{"a":1,"\u0061":2}`, `{"x":{"k":null,"k":null}}`, `[{"":0,"":0}]`} {
		t.Run(in, func(t *testing.T) {
			is := is.New(t)
			_, err := canon.ParseJSON([]byte(in))
			is.True(errs.Has(err, errs.InvalidRequest)) // duplicate key after unescaping
		})
	}
	is := is.New(t)
	_, err := canon.ParseJSON([]byte(`{"a":1,"A":2,"é":3,"e\u0301":4}`))
	is.NoErr(err) // keys differing in case or normalization form are distinct
}

func TestParseJSONRefusesTrailingData(t *testing.T) {
	for _, in := range []string{`{} {}`, `1 2`, `[]]`, `"a""b"`, `null,`, "true\x00", `{}x`, `01`} {
		t.Run(in, func(t *testing.T) {
			is := is.New(t)
			_, err := canon.ParseJSON([]byte(in))
			is.True(errs.Has(err, errs.InvalidRequest)) // exactly one JSON text
		})
	}
	is := is.New(t)
	_, err := canon.ParseJSON([]byte(" {} \n\t\r "))
	is.NoErr(err) // trailing whitespace is not data
}

func TestParseJSONRefusesMalformedText(t *testing.T) {
	for _, in := range []string{
		``, ` `, `[`, `{`, `{"a"}`, `{"a":}`, `{a:1}`, `[1,]`, `{"a":1,}`, `[,1]`, `'a'`, `"a`, `"\x"`, `"\u12"`,
		`"\u12g4"`, "\"a\tb\"", "\"\n\"", `tru`, `nul`, `True`, `-`, `1.`, `.5`, `+1`, `1e`, `NaN`, "\ufeff{}", `[1 2]`,
	} {
		t.Run(in, func(t *testing.T) {
			is := is.New(t)
			_, err := canon.ParseJSON([]byte(in))
			is.True(errs.Has(err, errs.InvalidRequest)) // not a strict JSON text
		})
	}
}

func TestParseJSONRefusesNestingBeyondMaxDepth(t *testing.T) {
	is := is.New(t)
	ok := strings.Repeat("[", canon.MaxDepth) + strings.Repeat("]", canon.MaxDepth)
	_, err := canon.ParseJSON([]byte(ok))
	is.NoErr(err) // MaxDepth levels are accepted
	deep := strings.Repeat(`{"a":`, canon.MaxDepth+1) + "1" + strings.Repeat("}", canon.MaxDepth+1)
	_, err = canon.ParseJSON([]byte(deep))
	is.True(errs.Has(err, errs.InvalidRequest)) // one more level is refused
}

func TestParseJSONErrorsNeverEchoTheInput(t *testing.T) {
	const secret = "sk-SECRET-0123456789"
	for _, in := range []string{
		`{"` + secret + `":1,"` + secret + `":2}`,
		`["` + secret + `"] ` + secret,
		`"` + secret + "\x01\"",
		`"` + secret + "\xff\"",
		`{"` + secret + `" 1}`,
		`"` + secret + `\ud800"`,
		secret,
	} {
		t.Run("", func(t *testing.T) {
			is := is.New(t)
			_, err := canon.ParseJSON([]byte(in))
			is.True(err != nil)                                                  // input is refused
			is.True(!strings.Contains(err.Error(), "SECRET"))                    // message does not contain the input
			is.True(!strings.Contains(errs.Redact(err), "SECRET"))               // nor does the log form
			is.True(strings.Contains(errs.Redact(err), "canon: invalid JSON: ")) // the log form keeps the safe problem text
		})
	}
}

func TestMarshalRefusesUnsupportedDynamicTypes(t *testing.T) {
	s := "x"
	for name, v := range map[string]canon.Value{
		"int":               1,
		"float64":           1.5,
		"json.Number":       json.Number("1"),
		"byte slice":        []byte("x"),
		"string slice":      []string{"x"},
		"typed map":         map[string]string{"a": "b"},
		"pointer":           &s,
		"struct":            struct{ A int }{1},
		"nested in array":   []canon.Value{"ok", 2},
		"nested in object":  map[string]canon.Value{"a": uint8(1)},
		"named string type": errs.Code("x"),
		"raw message":       json.RawMessage(`1`),
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			_, err := canon.Marshal(v)
			is.True(errs.Has(err, errs.InternalError)) // only the documented dynamic types are values
			_, err = canon.Hash(v)
			is.True(errs.Has(err, errs.InternalError)) // Hash refuses them too
		})
	}
}

func TestMarshalRefusesCyclicValues(t *testing.T) {
	is := is.New(t)
	m := map[string]canon.Value{}
	m["self"] = m
	_, err := canon.Marshal(m)
	is.True(errs.Has(err, errs.InternalError)) // a cycle is refused, not a stack overflow
	a := make([]canon.Value, 1)
	a[0] = a
	_, err = canon.Marshal(a)
	is.True(errs.Has(err, errs.InternalError)) // also through slices
}
