package postman_test

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/completion"
)

// benchTextEvent is a typical textChunk event of 120 bytes (with its blank line).
const benchTextEvent = `data: {"eventType":"textChunk","data":{"textContent":"quick brown fox jumps over!","metadata":{"model":"GPT_56_SOL"}}}` + "\n\n"

// loopReader serves its buffer forever.
type loopReader struct {
	buf []byte
	off int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.buf[l.off:])
	l.off = (l.off + n) % len(l.buf)
	return n, nil
}

func BenchmarkDecodeTextEvent(b *testing.B) {
	if len(benchTextEvent) != 120 {
		b.Fatalf("event is %d bytes", len(benchTextEvent))
	}
	r := &loopReader{buf: []byte(strings.Repeat(benchTextEvent, 128))}
	s := postman.NewReaderStream(r, postman.ReaderConfig{
		Rule:                 completion.RuleUsageAfterOutput,
		MaxEventBytes:        1 << 20,
		MaxOutputBytes:       1 << 62, // the stream never ends
		MaxToolArgumentBytes: 256 << 10,
		Observed:             []string{upstreamModel},
	})
	ctx := context.Background()
	for range 1024 { // steady state: buffers grown
		if _, err := s.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(benchTextEvent)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// stream4MiB is a legacy stream of about 4 MiB: text, thinking and tool-call
// chunks, then usage and [DONE].
func stream4MiB() []byte {
	var buf bytes.Buffer
	buf.WriteString(`data: {"eventType":"conversation","data":{"id":"conv-1"}}` + "\n\n")
	for i := 0; buf.Len() < 4<<20-4096; i++ {
		switch i % 8 {
		case 0:
			buf.WriteString(`data: {"eventType":"thinkingChunk","data":{"thinkingContent":"considering the next step","metadata":{"model":"GPT_56_SOL"}}}` + "\n\n")
		case 1:
			buf.WriteString(`data: {"eventType":"toolCallChunk","data":{"toolCallGroupId":"grp-1","toolCalls":[{"id":"call-1","index":0,"function":{"name":"get_weather","arguments":"x"}}],"metadata":{"model":"GPT_56_SOL"}}}` + "\n\n")
		default:
			buf.WriteString(`data: {"eventType":"textChunk","data":{"textContent":"chunk ` + strconv.Itoa(i) + ` of a long answer \"quoted\"","metadata":{"model":"GPT_56_SOL"}}}` + "\n\n")
		}
	}
	buf.WriteString(`data: {"eventType":"usage","data":{"promptTokens":1,"completionTokens":2,"totalTokens":3}}` + "\n\ndata: [DONE]\n\n")
	return buf.Bytes()
}

func BenchmarkDecode4MiB(b *testing.B) {
	input := stream4MiB()
	cfg := postman.ReaderConfig{
		Rule:                 completion.RuleLegacyDone,
		MaxEventBytes:        1 << 20,
		MaxOutputBytes:       16 << 20,
		MaxToolArgumentBytes: 4 << 20,
		Tools:                []string{"get_weather"},
		Observed:             []string{upstreamModel},
	}
	ctx := context.Background()
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	for b.Loop() {
		s := postman.NewReaderStream(bytes.NewReader(input), cfg)
		for {
			_, err := s.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
