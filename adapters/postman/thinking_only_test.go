package postman_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
)

// A turn whose only output is thinking (thinkingChunk, thinkingComplete),
// ended cleanly, is no answer: upstream_empty_stream under every completion
// rule, never an empty success. Claude Code answers a thinking-only end_turn
// with a nudge that costs one more dispatch; an error it retries instead.
func TestAThinkingOnlyTurnIsAnEmptyStream(t *testing.T) {
	thinking := frame("conversation", `{"conversationId":"c1"}`) +
		frame("thinkingChunk", `{"thinkingContent":"Planning a deterministic reply."}`) +
		frame("thinkingComplete", `{}`)
	for _, c := range []struct {
		rule completion.Rule
		tail string
	}{
		{completion.RuleUsageAfterOutput, usageFrame},
		{completion.RuleUsageAfterOutput, usageFrame + "data: [DONE]\n\n"},
		{completion.RuleLegacyDone, usageFrame + "data: [DONE]\n\n"},
		{completion.RuleExplicitOnly, usageFrame + frame("done", `{}`)},
	} {
		t.Run(string(c.rule), func(t *testing.T) {
			is := is.New(t)
			d := drain(t, webReader(thinking+c.tail, func(rc *postman.ReaderConfig) { rc.Rule = c.rule }))
			is.Equal(d.text, "")                                   // no text
			is.Equal(errs.CodeOf(d.err), errs.UpstreamEmptyStream) // and no success
		})
	}
}
