package emulator_test

import (
	"testing"

	"github.com/matryer/is"
)

// truncated says whether a stream is the truncated_frame fault (half a frame
// at the end) rather than a normal turn that ends with [DONE].
func truncated(st stream) bool { return st.tail != "" }

func TestAOnceFaultHappensOnceWhenItsPromptComesAgain(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := tokenPeer(t, s)
	const failed = "summarise #scenario=truncated_frame #loop=0 #once mk-0a1b2c3d"

	is.True(truncated(p.turn(userQuery(failed)))) // the first time: the fault

	// A retry of the same prompt: a normal answer.
	again := p.turn(userQuery(failed))
	is.True(!truncated(again))
	is.Equal(again.kinds[len(again.kinds)-1], "[DONE]")

	// The failed prompt ahead of the next one, as opencode sends them (the
	// failed answer dropped): only the next prompt's directives apply.
	const next = "[System]\nbe brief\n\n[User]\nhello\n\n[Assistant]\nhi\n\n[User]\n" + failed + "\n\n[User]\nnext #scenario=failure_after_text"
	st := p.turn(userQuery(next))
	is.True(!truncated(st))
	is.Equal(st.shape(), []string{"conversation", "textChunk", "failure"}) // the next prompt's own fault
}

func TestWithoutOnceAFaultRepeats(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := tokenPeer(t, s)
	const q = "summarise #scenario=truncated_frame #loop=0 mk-4e5f6a7b"
	is.True(truncated(p.turn(userQuery(q))))
	is.True(truncated(p.turn(userQuery(q)))) // the directive applies every time
	const next = "[User]\n" + q + "\n\n[User]\nnext"
	is.True(truncated(p.turn(userQuery(next)))) // a turn is all of its user blocks
}
