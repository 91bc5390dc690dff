package canon_test

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/canon"
)

// Properties use t.Fatalf, never is (STYLE A6).

var (
	// keyRunes makes collisions likely: case pairs, prefixes, NFC/NFD, astral.
	keyRunes = rapid.RuneFrom([]rune{'a', 'A', 'b', 'B', 'é', 'e', '\u0301', '😀', '｡', '"', '\\', '\x00', '\n'})
	genKey   = rapid.OneOf(rapid.StringOfN(keyRunes, 0, 3, -1), rapid.String())
	genStr   = rapid.OneOf(rapid.StringOfN(keyRunes, 0, 6, -1), rapid.String())
	genNum   = rapid.StringMatching(`-?(0|[1-9][0-9]{0,20})(\.[0-9]{1,6})?([eE][+-]?[0-9]{1,4})?`)
)

// genValue draws a random Value; containers are never nil, as ParseJSON makes them.
// The top level is always a container and containers are likely below it, so
// that most draws have objects whose key order matters.
func genValue(t *rapid.T, depth int) canon.Value {
	lo, hi := 0, 9
	switch {
	case depth == 0:
		lo = 5
	case depth >= 4:
		hi = 4
	}
	switch rapid.IntRange(lo, hi).Draw(t, "kind") {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, "bool")
	case 2, 3:
		return genStr.Draw(t, "string")
	case 4:
		return canon.Number(genNum.Draw(t, "number"))
	case 5, 6:
		n := rapid.IntRange(0, 6).Draw(t, "len")
		a := make([]canon.Value, n)
		for i := range a {
			a[i] = genValue(t, depth+1)
		}
		return a
	default:
		n := rapid.IntRange(0, 6).Draw(t, "len")
		m := make(map[string]canon.Value, n)
		for range n {
			m[genKey.Draw(t, "key")] = genValue(t, depth+1)
		}
		return m
	}
}

var valueGen = rapid.Custom(func(t *rapid.T) canon.Value { return genValue(t, 0) })

func mustMarshal(t *rapid.T, v canon.Value) []byte {
	b, err := canon.Marshal(v)
	if err != nil {
		t.Fatalf("Marshal refused a generated value: %v", err)
	}
	return b
}

func TestMarshalIsDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := valueGen.Draw(t, "v")
		a, b := mustMarshal(t, v), mustMarshal(t, v)
		if !bytes.Equal(a, b) {
			t.Fatalf("two Marshal calls differ:\n%q\n%q", a, b)
		}
		h1, err1 := canon.Hash(v)
		h2, err2 := canon.Hash(v)
		if err1 != nil || err2 != nil || h1 != h2 {
			t.Fatalf("Hash not deterministic: %q %v / %q %v", h1, err1, h2, err2)
		}
	})
}

func TestParseJSONRoundTripsMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := valueGen.Draw(t, "v")
		b := mustMarshal(t, v)
		back, err := canon.ParseJSON(b)
		if err != nil {
			t.Fatalf("ParseJSON refused Marshal output %q: %v", b, err)
		}
		if !reflect.DeepEqual(back, v) {
			t.Fatalf("round trip changed the value:\nin  %#v\nout %#v", v, back)
		}
	})
}

// reinsert deep-copies v, inserting every object's keys in a drawn order.
func reinsert(t *rapid.T, v canon.Value) canon.Value {
	switch x := v.(type) {
	case []canon.Value:
		out := make([]canon.Value, len(x))
		for i, e := range x {
			out[i] = reinsert(t, e)
		}
		return out
	case map[string]canon.Value:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		keys = rapid.Permutation(keys).Draw(t, "order")
		out := make(map[string]canon.Value, len(x))
		for _, k := range keys {
			out[k] = reinsert(t, x[k])
		}
		return out
	default:
		return v
	}
}

// respell writes v as a non-canonical JSON text: members in a drawn order,
// random whitespace between tokens, and characters randomly escaped.
func respell(t *rapid.T, sb *strings.Builder, v canon.Value) {
	ws := func() {
		sb.WriteString(rapid.SampledFrom([]string{"", "", " ", "\n", "\t", "\r\n  "}).Draw(t, "ws"))
	}
	ws()
	switch x := v.(type) {
	case nil:
		sb.WriteString("null")
	case bool:
		fmt.Fprint(sb, x)
	case canon.Number:
		sb.WriteString(string(x))
	case string:
		respellString(t, sb, x)
	case []canon.Value:
		sb.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				sb.WriteByte(',')
			}
			respell(t, sb, e)
		}
		ws()
		sb.WriteByte(']')
	case map[string]canon.Value:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		keys = rapid.Permutation(keys).Draw(t, "order")
		sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				sb.WriteByte(',')
			}
			ws()
			respellString(t, sb, k)
			ws()
			sb.WriteByte(':')
			respell(t, sb, x[k])
		}
		ws()
		sb.WriteByte('}')
	default:
		t.Fatalf("unexpected generated type %T", v)
	}
	ws()
}

func respellString(t *rapid.T, sb *strings.Builder, s string) {
	sb.WriteByte('"')
	for _, r := range s {
		mustEscape := r < 0x20 || r == '"' || r == '\\'
		if !mustEscape && !rapid.Bool().Draw(t, "escape") {
			sb.WriteRune(r)
			continue
		}
		switch {
		case r == '"' && rapid.Bool().Draw(t, "short"):
			sb.WriteString(`\"`)
		case r == '\\' && rapid.Bool().Draw(t, "short"):
			sb.WriteString(`\\`)
		case r == '/' && rapid.Bool().Draw(t, "short"):
			sb.WriteString(`\/`)
		case r == '\n' && rapid.Bool().Draw(t, "short"):
			sb.WriteString(`\n`)
		case r > 0xFFFF:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(sb, `\u%04x\u%04X`, hi, lo)
		default:
			if rapid.Bool().Draw(t, "upper") {
				fmt.Fprintf(sb, `\u%04X`, r)
			} else {
				fmt.Fprintf(sb, `\u%04x`, r)
			}
		}
	}
	sb.WriteByte('"')
}

func TestInsertionOrderAndSpellingNeverChangeTheBytes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := valueGen.Draw(t, "v")
		want := mustMarshal(t, v)
		if got := mustMarshal(t, reinsert(t, v)); !bytes.Equal(got, want) {
			t.Fatalf("reinserted keys changed the bytes:\n%q\n%q", got, want)
		}
		var sb strings.Builder
		respell(t, &sb, v)
		parsed, err := canon.ParseJSON([]byte(sb.String()))
		if err != nil {
			t.Fatalf("ParseJSON refused a respelled text %q: %v", sb.String(), err)
		}
		if got := mustMarshal(t, parsed); !bytes.Equal(got, want) {
			t.Fatalf("respelled text %q gave\n%q, want\n%q", sb.String(), got, want)
		}
	})
}
