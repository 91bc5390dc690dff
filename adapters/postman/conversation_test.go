package postman_test

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
	"github.com/pmgate/pmgate/domain/errs"
)

func TestAFreshTurnCanContinueAnUpstreamConversation(t *testing.T) {
	t.Parallel()
	emu := startEmu(t)
	for _, sc := range strategies {
		t.Run(sc.name, func(t *testing.T) {
			is := is.New(t)
			c := sc.client(t, emu, nil)
			first, _, err := open(t, c, userText("first question"))
			is.NoErr(err)
			conv := first.ConversationID()

			next := userText("second question")
			next.ConversationID = conv
			s, d, err := open(t, c, next)
			is.NoErr(err)
			is.Equal(d.err, io.EOF)                                                                                           // the continued turn completes
			is.Equal(s.ConversationID(), conv)                                                                                // in the same upstream conversation
			is.Equal(d.text, "Hello again from the pmgate emulator (turn 2 of this conversation). You said: second question") // answered from the conversation it holds

			reqs := emu.Requests()
			var body struct {
				Input struct {
					Query          string  `json:"query"`
					ConversationID *string `json:"conversationId"`
				} `json:"input"`
			}
			is.NoErr(json.Unmarshal(reqs[len(reqs)-1].Body, &body))
			is.True(body.Input.ConversationID != nil && *body.Input.ConversationID == conv) // the body names the conversation
			is.Equal(body.Input.Query, "second question")                                   // and carries only the new message

			unknown := userText("hello?")
			unknown.ConversationID = "conv-never-created"
			_, d, err = open(t, c, unknown)
			is.NoErr(err)
			is.True(errs.CodeOf(d.err) != "") // a conversation the service does not hold fails, never completes
		})
	}
	is := is.New(t)
	is.Equal(emu.Count(emulator.KindRejected), 0) // every body was well-formed
}
