package sse_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/sse"
)

// result is everything a run of a Splitter shows to its caller.
type result struct {
	lines   []string
	code    errs.Code // "" when no Feed failed
	partial bool
}

// feed runs a fresh Splitter over chunks and collects copies of the lines.
func feed(maxLine int, chunks [][]byte) result {
	s := sse.NewSplitter(maxLine)
	var r result
	emit := func(line []byte) error {
		r.lines = append(r.lines, string(line))
		return nil
	}
	for _, c := range chunks {
		if err := s.Feed(c, emit); err != nil {
			r.code = errs.CodeOf(err)
			break
		}
	}
	r.partial = s.Partial()
	return r
}

// cut splits b at the given sorted, in-range offsets.
func cut(b []byte, at []int) [][]byte {
	var out [][]byte
	prev := 0
	for _, i := range at {
		out = append(out, b[prev:i])
		prev = i
	}
	return append(out, b[prev:])
}

func TestSplitterEmitsLinesAndStripsOneCarriageReturn(t *testing.T) {
	is := is.New(t)
	r := feed(64, [][]byte{[]byte("data: a\r\n\r\n: c\r\r\nx\ry\n")})
	is.Equal(r.lines, []string{"data: a", "", ": c\r", "x\ry"}) // one \r stripped per line; bare \r is content
	is.Equal(r.code, errs.Code(""))                             // no error
	is.True(!r.partial)                                         // nothing left over
}

func TestSplitterBuffersPartialLineAcrossChunks(t *testing.T) {
	is := is.New(t)
	r := feed(64, [][]byte{[]byte("da"), []byte("ta: é"[:len("ta: é")-1]), []byte("ta: é"[len("ta: é")-1:] + "\r"), []byte("\nnext")})
	is.Equal(r.lines, []string{"data: é"}) // a UTF-8 rune and a CRLF split across chunks reassemble
	is.True(r.partial)                     // "next" is still waiting for its newline
}

func TestSplitterRejectsAnOverlongCompleteLine(t *testing.T) {
	is := is.New(t)
	r := feed(4, [][]byte{[]byte("abcd\nabcde\nz\n")})
	is.Equal(r.lines, []string{"abcd"})          // lines before the long one are emitted
	is.Equal(r.code, errs.UpstreamEventTooLarge) // the long line fails with the stable code
	is.True(!r.partial)                          // a spent splitter holds nothing
}

func TestSplitterRejectsAnOverlongPartialLineWithoutBufferingIt(t *testing.T) {
	is := is.New(t)
	s := sse.NewSplitter(4)
	is.NoErr(s.Feed([]byte("abc"), func([]byte) error { return nil })) // within the limit so far
	err := s.Feed([]byte("de"), func([]byte) error { return nil })
	is.True(errs.Has(err, errs.UpstreamEventTooLarge)) // 5 bytes without a newline can never fit
	err2 := s.Feed([]byte("\n"), func([]byte) error { return nil })
	is.Equal(err2, err) // the error is sticky
}

func TestSplitterAcceptsAMaximalLineWhoseCRLFIsSplit(t *testing.T) {
	is := is.New(t)
	r := feed(4, [][]byte{[]byte("abcd\r"), []byte("\n")})
	is.Equal(r.lines, []string{"abcd"}) // the \r of a split CRLF does not count against the limit
	is.Equal(r.code, errs.Code(""))     // no error
}

func TestSplitterStopsOnEmitError(t *testing.T) {
	is := is.New(t)
	boom := errors.New("sse_test: boom")
	s := sse.NewSplitter(16)
	var got []string
	err := s.Feed([]byte("a\nb\nc\n"), func(l []byte) error {
		got = append(got, string(l))
		if string(l) == "b" {
			return boom
		}
		return nil
	})
	is.True(errors.Is(err, boom))     // emit's error is returned unchanged
	is.Equal(got, []string{"a", "b"}) // no line after the failing one is emitted
}

func TestSplitterSteadyStateDoesNotAllocate(t *testing.T) {
	is := is.New(t)
	stream := bytes.Repeat([]byte("data: {\"type\":\"textChunk\",\"data\":{\"textContent\":\"hello\"}}\n"), 200)
	chunks := cut(stream, []int{1000, 2001, 3007, 5000, 7777})
	s := sse.NewSplitter(1 << 10)
	emit := func([]byte) error { return nil }
	for _, c := range chunks { // warm the buffer up
		is.NoErr(s.Feed(c, emit)) // warm-up feed succeeds
	}
	allocs := testing.AllocsPerRun(50, func() {
		for _, c := range chunks {
			_ = s.Feed(c, emit)
		}
	})
	is.Equal(allocs, 0.0) // no allocation per line once the buffer exists
}

func TestParseData(t *testing.T) {
	cases := []struct {
		line    string
		payload string
		ok      bool
	}{
		{"data: {\"a\":1}", "{\"a\":1}", true},
		{"data:{\"a\":1}", "{\"a\":1}", true},
		{"data:  x", " x", true}, // only one space is removed
		{"data: [DONE]", "[DONE]", true},
		{"data:", "", true},
		{"data", "", false}, // a field name without a colon is not a data line here
		{"event: message", "", false},
		{"id: 7", "", false},
		{": keep-alive", "", false},
		{"", "", false},
		{"Data: x", "", false}, // field names are case-sensitive
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.line), func(t *testing.T) {
			is := is.New(t)
			p, ok := sse.ParseData([]byte(c.line))
			is.Equal(ok, c.ok)             // data lines and only data lines are recognised
			is.Equal(string(p), c.payload) // the payload keeps everything after "data:" and one space
		})
	}
}

// genStream draws a stream made of lines (LF or CRLF endings, random bytes,
// multi-byte runes, some near the limit) and optionally an unterminated tail.
func genStream(t *rapid.T, maxLine int) []byte {
	piece := rapid.OneOf(
		rapid.SampledFrom([]string{"data: ", "data:", ": ", "event: x", "é", "😀", "\r", "[DONE]", "{\"type\":\"usage\"}"}),
		rapid.StringOfN(rapid.Map(rapid.ByteRange(0x20, 0x7e), func(c byte) rune { return rune(c) }), 0, maxLine+2, -1),
	)
	var b strings.Builder
	n := rapid.IntRange(0, 12).Draw(t, "lines")
	for range n {
		for range rapid.IntRange(0, 3).Draw(t, "pieces") {
			b.WriteString(piece.Draw(t, "piece"))
		}
		b.WriteString(rapid.SampledFrom([]string{"\n", "\r\n"}).Draw(t, "eol"))
	}
	if rapid.Bool().Draw(t, "tail") {
		b.WriteString(piece.Draw(t, "tailPiece"))
	}
	return []byte(b.String())
}

func TestSplitterChunkingDoesNotChangeTheLines(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxLine := rapid.IntRange(1, 40).Draw(t, "maxLine")
		stream := genStream(t, maxLine)
		var at []int
		for i := 1; i < len(stream); i++ {
			if rapid.IntRange(0, 3).Draw(t, "cutHere") == 0 {
				at = append(at, i)
			}
		}
		whole := feed(maxLine, [][]byte{stream})
		split := feed(maxLine, cut(stream, at))
		if fmt.Sprint(whole) != fmt.Sprint(split) {
			t.Fatalf("split %v gave %#v vs whole %#v", at, split, whole)
		}
		bytewise := feed(maxLine, cut(stream, allOffsets(len(stream))))
		if fmt.Sprint(whole) != fmt.Sprint(bytewise) {
			t.Fatalf("byte-at-a-time gave %#v vs whole %#v", bytewise, whole)
		}
		for _, l := range whole.lines {
			if len(l) > maxLine || strings.Contains(l, "\n") {
				t.Fatalf("emitted line %q breaks the limit %d or contains a newline", l, maxLine)
			}
		}
	})
}

func allOffsets(n int) []int {
	at := make([]int, 0, n)
	for i := 1; i < n; i++ {
		at = append(at, i)
	}
	return at
}

func FuzzSplitter(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\r\n\r\n: ping\n"), uint16(7), uint8(16))
	f.Add([]byte("data: é\r"), uint16(3), uint8(4))
	f.Add([]byte("abcd\r\nabcde\n"), uint16(5), uint8(4))
	f.Fuzz(func(t *testing.T, stream []byte, step uint16, maxLine uint8) {
		limit := int(maxLine) + 1
		stride := int(step)%17 + 1
		var at []int
		for i := stride; i < len(stream); i += stride {
			at = append(at, i)
		}
		whole := feed(limit, [][]byte{stream})
		split := feed(limit, cut(stream, at))
		if fmt.Sprint(whole) != fmt.Sprint(split) {
			t.Fatalf("stride %d gave %#v vs whole %#v", stride, split, whole)
		}
		if whole.code != "" && whole.code != errs.UpstreamEventTooLarge {
			t.Fatalf("unexpected code %s", whole.code)
		}
		for _, l := range whole.lines {
			if len(l) > limit || bytes.IndexByte([]byte(l), '\n') >= 0 {
				t.Fatalf("emitted line %q breaks the limit %d or contains a newline", l, limit)
			}
		}
	})
}

func BenchmarkSplitter120B(b *testing.B) {
	line := "data: {\"type\":\"textChunk\",\"data\":{\"textContent\":\"" + strings.Repeat("x", 120-len("data: {\"type\":\"textChunk\",\"data\":{\"textContent\":\"\"}}")-1) + "\"}}\n"
	if len(line) != 120 {
		b.Fatalf("line is %d bytes", len(line))
	}
	const lines = 4096
	stream := []byte(strings.Repeat(line, lines))
	const chunk = 4 << 10
	s := sse.NewSplitter(1 << 20)
	var n int
	emit := func(l []byte) error {
		if _, ok := sse.ParseData(l); ok {
			n++
		}
		return nil
	}
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	b.ResetTimer()
	iters := 0
	for b.Loop() {
		iters++
		for off := 0; off < len(stream); off += chunk {
			if err := s.Feed(stream[off:min(off+chunk, len(stream))], emit); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iters*lines), "ns/line")
	if n != iters*lines {
		b.Fatalf("parsed %d data lines, want %d", n, iters*lines)
	}
}
