package postman_test

// Tests a mutation run showed missing, each asserting what a client would see.

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
)

func legacyReader(input string) *postman.Stream {
	return webReader(input, func(rc *postman.ReaderConfig) { rc.Rule = completion.RuleLegacyDone })
}

func TestAOneByteUnterminatedLineAfterDoneIsNotACompletion(t *testing.T) {
	for _, rule := range []completion.Rule{completion.RuleLegacyDone, completion.RuleUsageAfterOutput, completion.RuleExplicitOnly} {
		t.Run(string(rule), func(t *testing.T) {
			is := is.New(t)
			input := textFrame("Hello") + usageFrame + "data: [DONE]\n\n" + "x"
			d := drain(t, webReader(input, func(rc *postman.ReaderConfig) { rc.Rule = rule }))
			is.True(d.err != io.EOF) // one stray byte after [DONE] is no proven end
			code := errs.CodeOf(d.err)
			is.True(code == errs.UpstreamIncompleteStream || code == errs.UpstreamDataAfterDone) // it is a cut or extra data
		})
	}
}

func TestOnlyAnExactDoneTerminates(t *testing.T) {
	for _, done := range []string{"data: [DONE] ", "data:  [DONE]", "data: [DONE]\t", "data: [done]", "data: [DONE]x"} {
		t.Run(fmt.Sprintf("%q", done), func(t *testing.T) {
			is := is.New(t)
			d := drain(t, legacyReader(textFrame("Hello")+done+"\n\n"))
			is.True(d.err != io.EOF) // not a terminator, so the stream never proved its end
		})
	}
	is := is.New(t)
	d := drain(t, legacyReader(textFrame("Hello")+"data: [DONE]\n\n"))
	is.Equal(d.err, io.EOF) // the exact marker does
	d = drain(t, legacyReader(textFrame("Hello")+"data:[DONE]\n\n"))
	is.Equal(d.err, io.EOF) // with or without the optional space after the colon
}

func TestTextAloneOneByteOverTheOutputLimitIsRefused(t *testing.T) {
	for _, c := range []struct {
		extra int
		code  errs.Code
	}{{0, ""}, {1, errs.UpstreamOutputTooLarge}} {
		t.Run(fmt.Sprintf("+%d", c.extra), func(t *testing.T) {
			is := is.New(t)
			input := textFrame(strings.Repeat("t", 1000)) + textFrame(strings.Repeat("u", 24+c.extra)) + usageFrame
			d := drain(t, webReader(input, func(rc *postman.ReaderConfig) { rc.MaxOutputBytes = 1024 }))
			if c.code == "" {
				is.Equal(d.err, io.EOF)     // 1024 text bytes fit a 1024-byte limit
				is.Equal(len(d.text), 1024) // all of them
				return
			}
			is.Equal(errs.CodeOf(d.err), c.code)        // one text byte more fails
			is.Equal(d.text, strings.Repeat("t", 1000)) // after the text that fitted
		})
	}
}
