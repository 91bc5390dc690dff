package postman_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/ports"
)

// countingReader is a chunkReader that counts its reads.
type countingReader struct {
	chunkReader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.chunkReader.Read(p)
}

// The stream says it would read (ports.Buffered false) right before every
// read of the body, and only then: the events of one read are all returned
// before the next read, so a renderer that holds them until the stream would
// wait writes each read's events in one write and never holds one across a
// wait.
func TestStreamSaysItWouldWaitBeforeEveryReadOnly(t *testing.T) {
	is := is.New(t)
	ev := func(text string) string {
		return `data: {"eventType":"textChunk","data":{"textContent":"` + text + `","metadata":{"model":"GPT_55"}}}` + "\n\n"
	}
	first := `data: {"eventType":"conversation","data":{"id":"conv-1"}}` + "\n\n" + ev("a") + ev("b")
	second := ev("c") + "data: [DONE]\n\n"
	r := &countingReader{chunkReader: chunkReader{parts: [][]byte{[]byte(first), []byte(second)}}}
	s := postman.NewReaderStream(r, postman.ReaderConfig{Rule: completion.RuleLegacyDone, MaxEventBytes: 1 << 20,
		MaxOutputBytes: 1 << 20, MaxToolArgumentBytes: 1 << 20, Observed: []string{"GPT_55"}})
	var log bytes.Buffer // "w" per read the stream said it would wait for, the text of each text event
	for {
		reads, buffered := r.reads, ports.IsBuffered(s)
		if !buffered {
			log.WriteByte('w')
		}
		e, err := s.Next(context.Background())
		is.Equal(r.reads > reads, !buffered) // a read exactly when it said it would wait
		if errors.Is(err, io.EOF) {
			break
		}
		is.NoErr(err)
		if e.Kind == chat.EventText {
			log.WriteString(e.Text)
		}
	}
	is.Equal(log.String(), "wabwcw") // said before each of the three reads (the last one reads the EOF)
	is.Equal(r.reads, 3)
	is.True(ports.IsBuffered(s)) // the end is known: Next reads no more
}

// A stream that reached its outcome gives its read buffer to the next one;
// what it reports afterwards (outcome, conversation id, model label) is its
// own, whatever the next stream read into that buffer.
func TestAFinishedStreamKeepsItsOwnResultsAfterItsBufferIsReused(t *testing.T) {
	is := is.New(t)
	body := func(conv, model, text string) []byte {
		return []byte(`data: {"eventType":"conversation","data":{"id":"` + conv + `"}}` + "\n\n" +
			`data: {"eventType":"textChunk","data":{"textContent":"` + text + `","metadata":{"model":"` + model + `"}}}` + "\n\n" +
			"data: [DONE]\n\n")
	}
	cfg := func(model string) postman.ReaderConfig {
		return postman.ReaderConfig{Rule: completion.RuleLegacyDone, MaxEventBytes: 1 << 20, MaxOutputBytes: 1 << 20,
			MaxToolArgumentBytes: 1 << 20, Observed: []string{model}}
	}
	drain := func(s *postman.Stream) string {
		var text string
		for {
			e, err := s.Next(t.Context())
			if errors.Is(err, io.EOF) {
				return text
			}
			is.NoErr(err)
			text += e.Text
		}
	}
	a := postman.NewReaderStream(&chunkReader{parts: [][]byte{body("conv-aaaaaaaa", "GPT_55", "first")}}, cfg("GPT_55"))
	is.Equal(drain(a), "first")
	for range 8 { // later streams of other content, likely in a's buffer
		b := postman.NewReaderStream(&chunkReader{parts: [][]byte{body("conv-bbbbbbbb", "GPT_56", "second")}}, cfg("GPT_56"))
		is.Equal(drain(b), "second")
		is.Equal(b.ConversationID(), "conv-bbbbbbbb")
	}
	is.Equal(a.ConversationID(), "conv-aaaaaaaa") // a's own, not the later streams'
	l, ok := a.ModelObserved()
	is.True(ok)
	is.Equal(l, "GPT_55")
	is.Equal(string(a.Outcome().State), "COMPLETE_EXPLICIT")
}
