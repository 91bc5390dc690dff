package jsonlex_test

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/jsonlex"
)

func TestHex4(t *testing.T) {
	is := is.New(t)
	for s, want := range map[string]rune{"0000": 0, "00e9": 0xe9, "D83D": 0xd83d, "ffFF": 0xffff, "12": -1, "12g4": -1} {
		r, ok := jsonlex.Hex4(s, 0)
		if want < 0 {
			is.True(!ok) // fewer than four or a non-hex digit is refused
			continue
		}
		is.True(ok)
		is.Equal(r, want)
		rb, okb := jsonlex.Hex4([]byte(s), 0)
		is.Equal(rb, r) // bytes and strings read alike
		is.Equal(okb, ok)
	}
	r, ok := jsonlex.Hex4("x1234", 1)
	is.True(ok)
	is.Equal(r, rune(0x1234)) // from the offset
	_, ok = jsonlex.Hex4("123", 0)
	is.True(!ok) // too short
}

func TestPair(t *testing.T) {
	is := is.New(t)
	r, ok := jsonlex.Pair(0xD83D, 0xDE00)
	is.True(ok)
	is.Equal(r, '😀')
	for _, p := range [][2]rune{{0xDE00, 0xD83D}, {0xD83D, 0x41}, {0x41, 0xDE00}, {0xD83D, 0xD83D}} {
		_, ok := jsonlex.Pair(p[0], p[1])
		is.True(!ok) // not a high then a low surrogate
	}
}

func TestUnquoteCases(t *testing.T) {
	is := is.New(t)
	for raw, want := range map[string]string{
		`plain`:        "plain",
		`a\"b\\c\/d`:   `a"b\c/d`,
		`\b\f\n\r\t`:   "\b\f\n\r\t",
		`\u00e9\u00E9`: "éé",
		`\ud83d\ude00`: "😀",
		`\ud83d`:       "\uFFFD",
		`\ude00\ud83d`: "\uFFFD\uFFFD",
		`\ud83d\u0041`: "\uFFFDA", // the second escape stands alone
		"caf\xc3":      "caf\uFFFD",
		"\xff\xfe":     "\uFFFD\uFFFD",
	} {
		got, ok := jsonlex.Unquote(nil, raw)
		is.True(ok)                 // valid content
		is.Equal(string(got), want) // decoded as encoding/json does
	}
	for _, raw := range []string{`a"b`, "a\nb", `\`, `\x`, `\u12`, `\u12g4`, `\ud83d\u12`} {
		_, ok := jsonlex.Unquote(nil, raw)
		is.True(!ok) // refused
	}
}

// FuzzUnquoteAgreesWithEncodingJSON: on every content, Unquote accepts exactly
// what encoding/json accepts as a string and decodes it to the same text.
func FuzzUnquoteAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{`plain`, `\ud83d\ude00`, `\ud83d`, `\ud83d\u0041`, "\xff", `\"`, `\u00`, "\x01", `é\n`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, ok := jsonlex.Unquote(nil, raw)
		gotB, okB := jsonlex.Unquote(nil, []byte(raw))
		if ok != okB || string(got) != string(gotB) {
			t.Fatalf("string and bytes disagree on %q", raw)
		}
		var want string
		err := json.Unmarshal([]byte(`"`+raw+`"`), &want)
		if (err == nil) != ok {
			t.Fatalf("Unquote(%q) ok=%v, encoding/json err=%v", raw, ok, err)
		}
		if ok && string(got) != want {
			t.Fatalf("Unquote(%q) = %q, encoding/json %q", raw, got, want)
		}
		if ok && !utf8.Valid(got) {
			t.Fatalf("Unquote(%q) is not valid UTF-8", raw)
		}
	})
}

// TestDecodeReportsALoneSurrogate: Decode decodes as Unquote does and says
// whether a lone surrogate escape stood for U+FFFD; a U+FFFD written as
// itself, as its own escape or as bytes that are not UTF-8 is not one.
func TestDecodeReportsALoneSurrogate(t *testing.T) {
	is := is.New(t)
	for raw, lone := range map[string]bool{
		`\ud800`:        true,
		`a\udc00b`:      true, // a low surrogate alone
		`\ud83d\u0041`:  true, // a high one followed by no low one
		`\ud83d\ude00`:  false,
		"\uFFFD":        false,
		`\ufffd`:        false,
		"\xff":          false,
		`plain \n text`: false,
	} {
		got, ok, gotLone := jsonlex.Decode(nil, raw)
		want, _ := jsonlex.Unquote(nil, raw)
		is.True(ok)                         // valid content
		is.Equal(string(got), string(want)) // the same text as Unquote
		is.Equal(gotLone, lone)             // a lone surrogate escape, and only one, is reported
	}
}
