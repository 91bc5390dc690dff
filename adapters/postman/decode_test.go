package postman_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
)

func webReader(input string, mutate ...func(*postman.ReaderConfig)) *postman.Stream {
	c := postman.ReaderConfig{
		Rule:                 completion.RuleUsageAfterOutput,
		MaxEventBytes:        1 << 20,
		MaxOutputBytes:       4 << 20,
		MaxToolArgumentBytes: 256 << 10,
		Tools:                []string{"get_weather", "get_time"},
		Observed:             []string{upstreamModel},
	}
	for _, m := range mutate {
		m(&c)
	}
	return postman.NewReaderStream(strings.NewReader(input), c)
}

func frame(eventType, data string) string {
	return `data: {"eventType":"` + eventType + `","data":` + data + "}\n\n"
}

func textFrame(s string) string { return frame("textChunk", `{"textContent":"`+s+`"}`) }

func toolFrame(id, name, args string) string {
	return frame("toolCallChunk", `{"toolCallGroupId":"g1","toolCalls":[{"id":"`+id+`","index":0,"function":{"name":"`+name+`","arguments":"`+args+`"}}]}`)
}

const usageFrame = "data: {\"eventType\":\"usage\",\"data\":{\"totalTokens\":1}}\n\n"

func TestToolArgumentLimitAtBoundaryAndPlusOne(t *testing.T) {
	for _, c := range []struct {
		extra int
		code  errs.Code
	}{{0, ""}, {1, errs.UpstreamToolArgumentsTooLarge}} {
		t.Run(fmt.Sprintf("+%d", c.extra), func(t *testing.T) {
			is := is.New(t)
			half := strings.Repeat("a", 128)
			input := toolFrame("c1", "get_weather", half) + toolFrame("c1", "get_weather", half+strings.Repeat("b", c.extra)) + usageFrame
			s := webReader(input, func(rc *postman.ReaderConfig) { rc.MaxToolArgumentBytes = 256 })
			d := drain(t, s)
			if c.code == "" {
				is.Equal(d.err, io.EOF)                                         // 256 argument bytes fit a 256-byte limit
				is.Equal(len(postman.ToolCalls(s, d.events)[0].Arguments), 256) // all of them
			} else {
				is.Equal(errs.CodeOf(d.err), c.code) // one byte more fails
				is.Equal(len(d.events), 1)           // after the first delta only
			}
		})
	}
}

func TestOutputLimitCountsTextAndArgumentsAtBoundaryAndPlusOne(t *testing.T) {
	for _, c := range []struct {
		extra int
		code  errs.Code
	}{{0, ""}, {1, errs.UpstreamOutputTooLarge}} {
		t.Run(fmt.Sprintf("+%d", c.extra), func(t *testing.T) {
			is := is.New(t)
			input := textFrame(strings.Repeat("t", 1000)) +
				frame("thinkingChunk", `{"thinkingContent":"`+strings.Repeat("x", 2000)+`"}`) + // thinking is not output
				toolFrame("c1", "get_weather", strings.Repeat("a", 24+c.extra)) + usageFrame
			d := drain(t, webReader(input, func(rc *postman.ReaderConfig) { rc.MaxOutputBytes = 1024 }))
			if c.code == "" {
				is.Equal(d.err, io.EOF) // 1000 text + 24 argument bytes fit 1024
			} else {
				is.Equal(errs.CodeOf(d.err), c.code)        // one byte more fails
				is.Equal(d.text, strings.Repeat("t", 1000)) // the text before it was delivered
			}
		})
	}
}

func TestEventSizeLimitAtBoundaryAndPlusOne(t *testing.T) {
	for _, c := range []struct {
		extra int
		code  errs.Code
	}{{0, ""}, {1, errs.UpstreamEventTooLarge}} {
		t.Run(fmt.Sprintf("+%d", c.extra), func(t *testing.T) {
			is := is.New(t)
			line := strings.TrimSuffix(textFrame(""), "\n\n")
			pad := 1024 - len(line)
			line = strings.TrimSuffix(textFrame(strings.Repeat("p", pad+c.extra)), "\n\n")
			is.Equal(len(line), 1024+c.extra) // the line is exactly at the limit, or one byte over
			for _, eol := range []string{"\n", "\r\n"} {
				d := drain(t, webReader(line+eol+"\n"+usageFrame, func(rc *postman.ReaderConfig) { rc.MaxEventBytes = 1024 }))
				if c.code == "" {
					is.Equal(d.err, io.EOF) // a 1024-byte line fits MAX_EVENT_BYTES=1024 (CR not counted)
				} else {
					is.Equal(errs.CodeOf(d.err), c.code) // one byte more fails
					is.Equal(len(d.events), 0)           // before anything of it is emitted
				}
			}
		})
	}
}

func TestTheEndIsSticky(t *testing.T) {
	is := is.New(t)
	s := webReader(textFrame("hi") + usageFrame)
	d := drain(t, s)
	is.Equal(d.err, io.EOF) // complete
	for range 3 {
		_, err := s.Next(context.Background())
		is.Equal(err, io.EOF) // io.EOF again
	}
	s = webReader(textFrame("hi"))
	d = drain(t, s)
	is.Equal(errs.CodeOf(d.err), errs.UpstreamCompletionAmbiguous) // ambiguous
	_, err := s.Next(context.Background())
	is.Equal(errs.CodeOf(err), errs.UpstreamCompletionAmbiguous) // the same error again
	is.NoErr(s.Close())                                          // Close after the end
	is.NoErr(s.Close())                                          // twice
}

func TestNextWithADoneContextEndsTheStream(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := webReader(textFrame("hi") + usageFrame)
	_, err := s.Next(ctx)
	is.Equal(errs.CodeOf(err), errs.ClientCancelled) // a cancelled caller
	is.Equal(s.Outcome().State, completion.Aborted)  // never completes

	ctx, cancel = context.WithTimeout(context.Background(), 0)
	defer cancel()
	s = webReader(textFrame("hi") + usageFrame)
	_, err = s.Next(ctx)
	is.Equal(errs.CodeOf(err), errs.UpstreamTimeout) // a caller deadline is a timeout

	s = webReader(textFrame("hi") + usageFrame)
	is.NoErr(s.Close()) // Close before the first Next
	_, err = s.Next(context.Background())
	is.Equal(errs.CodeOf(err), errs.ClientCancelled) // Close before the end cancels
}

// failingReader returns data, then an error.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestReaderErrorsEndTheStream(t *testing.T) {
	cases := []struct {
		name string
		err  error
		code errs.Code
	}{
		{"reset", errors.New("connection reset by peer"), errs.UpstreamConnectionLost},
		{"unexpected EOF", io.ErrUnexpectedEOF, errs.UpstreamConnectionLost},
		{"cancelled", context.Canceled, errs.ClientCancelled},
		{"deadline", context.DeadlineExceeded, errs.UpstreamTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			r := &failingReader{data: []byte(textFrame("hi") + usageFrame + "data: [DONE]\n\n"), err: c.err}
			s := postman.NewReaderStream(r, postman.ReaderConfig{Rule: completion.RuleLegacyDone, MaxEventBytes: 1024, MaxOutputBytes: 1024, MaxToolArgumentBytes: 256})
			d := drain(t, s)
			is.Equal(errs.CodeOf(d.err), c.code) // even after [DONE], only a clean EOF completes
			is.Equal(d.text, "hi")               // the text before the error was delivered
		})
	}
}

type stalledReader struct{}

func (stalledReader) Read([]byte) (int, error) { return 0, nil }

func TestAReaderThatMakesNoProgressIsALostConnection(t *testing.T) {
	is := is.New(t)
	s := postman.NewReaderStream(stalledReader{}, postman.ReaderConfig{Rule: completion.RuleLegacyDone, MaxEventBytes: 1024, MaxOutputBytes: 1024, MaxToolArgumentBytes: 256})
	_, err := s.Next(context.Background())
	is.Equal(errs.CodeOf(err), errs.UpstreamConnectionLost) // io.ErrNoProgress-style readers do not spin forever
}

func TestToolCallsAreHandedOutOnlyAfterCompletion(t *testing.T) {
	is := is.New(t)
	s := webReader(toolFrame("c1", "get_weather", "{}") + usageFrame)
	ev, err := s.Next(context.Background())
	is.NoErr(err)                                         // the delta
	is.Equal(ev.Kind, chat.EventToolCall)                 // is a tool call
	is.Equal(postman.ToolCalls(s, []chat.Event{ev}), nil) // not handed out before the end
	d := drain(t, s)
	is.Equal(d.err, io.EOF) // complete
	calls := postman.ToolCalls(s, append([]chat.Event{ev}, d.events...))
	is.Equal(len(calls), 1)                // now it is
	is.Equal(calls[0].Name, "get_weather") // with the client's name
}

func TestModelLabelIsCheckedOnEveryEvent(t *testing.T) {
	is := is.New(t)
	input := frame("thinkingChunk", `{"thinkingContent":"x","metadata":{"model":"GPT_56_SOL"}}`) +
		frame("usage", `{"totalTokens":1,"metadata":{"modelId":"SOMETHING_ELSE"}}`)
	s := webReader(input)
	d := drain(t, s)
	is.Equal(errs.CodeOf(d.err), errs.UpstreamModelMismatch) // a later mismatching label fails too
	label, ok := s.ModelObserved()
	is.True(ok)                    // observed
	is.Equal(label, upstreamModel) // the first label is the one reported
}

func TestScannerEdgeCases(t *testing.T) {
	cases := []struct {
		payload string
		code    errs.Code
	}{
		{`{"eventType":"ping"}`, ""},
		{` {"eventType" : "ping" , "data" : null } `, ""},
		{`{"eventType":"ping","data":{"a":[1,-2.5e+3,true,false,null,"\u00e9\/"]}}`, ""},
		{`{"eventType":"ping",}`, errs.UpstreamMalformedEvent},
		{`{"eventType":"ping"} x`, errs.UpstreamMalformedEvent},
		{`{"eventType":"ping","data":01}`, errs.UpstreamMalformedEvent},
		{`{"eventType":"ping","data":"\x"}`, errs.UpstreamMalformedEvent},
		{`{"eventType":"ping","data":"` + "\x01" + `"}`, errs.UpstreamMalformedEvent},
		{`{"eventType":"ping","data":"\ud83d"}`, ""},
		{`{"eventType":"ping","data":tru}`, errs.UpstreamMalformedEvent},
		{`{"eventType":"ping","data":1.}`, errs.UpstreamMalformedEvent},
		{`{"eventType":"ping","data":-}`, errs.UpstreamMalformedEvent},
		{`{"eventType":"ping","data":[1,]}`, errs.UpstreamMalformedEvent},
		{`"just a string"`, errs.UpstreamUnverifiedEventShape},
		{`null`, errs.UpstreamUnverifiedEventShape},
		{`{}`, errs.UpstreamUnverifiedEventShape},
		{`{"eventType":7}`, errs.UpstreamUnverifiedEventShape},
		{`{"eventType":"ping","eventType":"ping"}`, errs.UpstreamUnverifiedEventShape},
		{`{"eventType":"p\u0069ng"}`, errs.UpstreamUnverifiedEventShape},
		{`{"eventType":"PING"}`, errs.UpstreamUnverifiedEventShape},
	}
	for _, c := range cases {
		t.Run(c.payload, func(t *testing.T) {
			is := is.New(t)
			d := drain(t, webReader("data: "+c.payload+"\n\n"+textFrame("x")+usageFrame))
			if c.code == "" {
				is.Equal(d.err, io.EOF) // accepted and ignored
			} else {
				is.Equal(errs.CodeOf(d.err), c.code) // refused with the stable code
			}
		})
	}
}

func TestDecodedEventsDoNotDependOnReadSize(t *testing.T) {
	is := is.New(t)
	input := textFrame("a") + toolFrame("c1", "get_weather", "{}") + textFrame("b") + usageFrame
	var first []chat.Event
	for _, size := range []int{1, 2, 3, 7, 64, 4096} {
		c := postman.ReaderConfig{Rule: completion.RuleUsageAfterOutput, MaxEventBytes: 1024, MaxOutputBytes: 1024,
			MaxToolArgumentBytes: 256, Tools: []string{"get_weather"}, ReadChunk: size}
		d := drain(t, postman.NewReaderStream(bytes.NewReader([]byte(input)), c))
		is.Equal(d.err, io.EOF) // complete with every read size
		if first == nil {
			first = d.events
			continue
		}
		is.Equal(fmt.Sprintf("%+v", derefEvents(d.events)), fmt.Sprintf("%+v", derefEvents(first))) // the same events
	}
}

func derefEvents(evs []chat.Event) []any {
	out := make([]any, len(evs))
	for i, e := range evs {
		switch {
		case e.ToolCall != nil:
			out[i] = *e.ToolCall
		case e.Usage != nil:
			out[i] = fmt.Sprint(*e.Usage.TotalTokens)
		default:
			out[i] = e
		}
	}
	return out
}
