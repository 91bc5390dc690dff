package conversation

import (
	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
)

// TranscriptHash is the canonical hash of the dialogue of msgs as the client
// will echo it: the value form of package canon (echoed tool-call arguments
// compare as JSON values), the same form tool-call groups bind. The
// instructions (Instructions: the leading system and developer messages) are
// not part of it: like the tools, they are a setting an anchor records
// (InstructionsHash), so a request that changes only them (an agent's
// compaction request) finds the anchor of its history and is told apart by a
// declared row. Anchors are recorded and looked up with it and nothing else,
// so this is the one place that chooses the normalization. No issued calls are
// passed: both sides of the comparison are transcripts in the client's own
// form (the messages of a request plus the text answer), so there are no
// schema defaults to drop.
func TranscriptHash(msgs []chat.Message) (string, error) {
	_, dialogue := Instructions(msgs)
	return canon.TranscriptHashV2(dialogue, nil, nil)
}

// Instructions splits msgs into the instructions, the leading run of system
// and developer messages (a system prompt, Responses instructions, a
// developer message), and the dialogue after them.
func Instructions(msgs []chat.Message) (instructions, dialogue []chat.Message) {
	i := 0
	for i < len(msgs) && (msgs[i].Role == chat.RoleSystem || msgs[i].Role == chat.RoleDeveloper) {
		i++
	}
	return msgs[:i], msgs[i:]
}

// InstructionsHash is the canonical hash of the instructions of msgs (the
// same form as TranscriptHash); "" when there are none.
func InstructionsHash(msgs []chat.Message) (string, error) {
	instructions, _ := Instructions(msgs)
	if len(instructions) == 0 {
		return "", nil
	}
	return canon.TranscriptHashV2(instructions, nil, nil)
}

// Split divides the messages of a fresh request into the history the gateway
// may have anchored and the new user messages after it: added is the run of
// trailing `user` and `system` messages, history everything before. A system
// message there belongs to the new turn: Claude Code sends an "Environment
// update" as a system message after the user's prompt when its environment
// changed (the project became a git repository). ok is false when there is
// nothing to continue: no user message in that run, or a history that does
// not end with an assistant answer (a first turn, or a turn after tool
// results the gateway never answered).
func Split(msgs []chat.Message) (history, added []chat.Message, ok bool) {
	i, users := len(msgs), 0
	for i > 0 && (msgs[i-1].Role == chat.RoleUser || msgs[i-1].Role == chat.RoleSystem) {
		if msgs[i-1].Role == chat.RoleUser {
			users++
		}
		i--
	}
	if users == 0 || i == 0 || msgs[i-1].Role != chat.RoleAssistant || len(msgs[i-1].ToolCalls) > 0 {
		return nil, nil, false
	}
	return msgs[:i], msgs[i:], true
}

// Reply is the assistant message of a text answer as the gateway returned it.
func Reply(text string) chat.Message {
	return chat.Message{Role: chat.RoleAssistant, Content: &text}
}
