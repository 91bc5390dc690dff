package postman_test

import (
	"io"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/chat"
)

func conversationsOf(events []chat.Event) []string {
	var ids []string
	for _, e := range events {
		if e.Kind == chat.EventConversation {
			ids = append(ids, e.ConversationID)
		}
	}
	return ids
}

func TestOnlyAConversationEventsDataIDIsTheConversation(t *testing.T) {
	is := is.New(t)
	// A text chunk whose data carries its own message id is not a conversation.
	d := drain(t, webReader(frame("textChunk", `{"id":"msg-1","textContent":"hi"}`)+usageFrame))
	is.Equal(d.err, io.EOF)
	is.Equal(len(conversationsOf(d.events)), 0)
	// A conversation event's data.id is.
	d = drain(t, webReader(frame("conversation", `{"id":"conv-7"}`)+textFrame("hi")+usageFrame))
	is.Equal(d.err, io.EOF)
	is.Equal(conversationsOf(d.events), []string{"conv-7"})
}

func TestSnakeCaseConversationIDIsRead(t *testing.T) {
	is := is.New(t)
	d := drain(t, webReader(frame("textChunk", `{"conversation_id":"conv-9","textContent":"hi"}`)+usageFrame))
	is.Equal(d.err, io.EOF)
	is.Equal(conversationsOf(d.events), []string{"conv-9"})
	d = drain(t, webReader(`data: {"eventType":"textChunk","conversation_id":"conv-8","data":{"textContent":"hi"}}`+"\n\n"+usageFrame))
	is.Equal(d.err, io.EOF)
	is.Equal(conversationsOf(d.events), []string{"conv-8"})
}
