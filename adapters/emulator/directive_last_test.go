package emulator_test

import (
	"testing"

	"github.com/matryer/is"
)

// Claude Code merges a prompt that failed with the user's next prompt into
// one user message, so the newest user turn holds both: the newest directive
// of each kind wins, and a prompt that asks for the normal turn
// (#scenario=usage_last) is not failed again by the failed prompt's scenario.
func TestTheNewestDirectiveOfATurnWins(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, p := range []*peer{webPeer(t, s), tokenPeer(t, s)} {
		t.Run(p.strategy, func(t *testing.T) {
			is := is.New(t)
			merged := "Summarize. #loop=0 #scenario=failure_after_text\n\nGo on. #scenario=usage_last #loop=2"
			st := p.turn(userQuery(merged).withTools(false, true, weatherTool))
			is.Equal(st.first("failure"), nil)        // the newer #scenario=usage_last wins
			is.True(len(st.all("toolCallChunk")) > 0) // and the newer #loop=2 asks for tools
			st = p.turn(userQuery("Summarize. #scenario=failure_after_text\n\nGo on."))
			is.True(st.first("failure") != nil) // without a newer one, the earlier prompt's directive still applies
			st = p.turn(userQuery("look #loop=2\n\nthen answer #loop=0").withTools(false, true, weatherTool))
			is.Equal(len(st.all("toolCallChunk")), 0) // #loop=0 is the newest
		})
	}
}
