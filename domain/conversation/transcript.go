package conversation

import (
	"pmgate/domain/canon"
	"pmgate/domain/chat"
)

// TranscriptHash is the canonical hash of msgs as the client will echo them.
// Anchors are recorded and looked up with it, and nothing else: the
// normalization of echoed assistant turns lives in package canon, so this is
// the one place that chooses it. tools are the request's tool definitions
// (an echo normalization may use their schemas).
func TranscriptHash(msgs []chat.Message, tools []chat.Tool) (string, error) {
	_ = tools
	return canon.TranscriptHash(msgs)
}

// Split divides the messages of a fresh request into the history the gateway
// may have anchored and the new user messages after it: added is the run of
// trailing `user` messages, history everything before. ok is false when there
// is nothing to continue: no trailing user message, or a history that does
// not end with an assistant answer (a first turn, or a turn after tool results
// the gateway never answered).
func Split(msgs []chat.Message) (history, added []chat.Message, ok bool) {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role == chat.RoleUser {
		i--
	}
	if i == len(msgs) || i == 0 || msgs[i-1].Role != chat.RoleAssistant || len(msgs[i-1].ToolCalls) > 0 {
		return nil, nil, false
	}
	return msgs[:i], msgs[i:], true
}

// Reply is the assistant message of a text answer as the gateway returned it.
func Reply(text string) chat.Message {
	return chat.Message{Role: chat.RoleAssistant, Content: &text}
}
