package correlation

import "github.com/pmgate/pmgate/domain/chat"

// A conversation that moved past a group: the client's request shows the
// group's tool calls in its history (an assistant message echoing their ids)
// but answers none of them — it goes on with new user text, or answers
// another group. Its continuation could only come from a client that went
// back in its own transcript; the pending group would otherwise hold its
// key's capacity until the pending TTL. The app cancels such a group (row
// C28) before the request's own turn, so the capacity is free for it.

// Unanswered returns the ids of the tool calls that msgs' assistant messages
// show and that no tool message of msgs answers, distinct, in order of
// appearance. A request that answers every call it shows (every ordinary
// turn of an agent loop) yields none.
func Unanswered(msgs []chat.Message) []string {
	answered := map[string]bool{}
	for _, m := range msgs {
		if m.Role == chat.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range msgs {
		if m.Role != chat.RoleAssistant {
			continue
		}
		for _, c := range m.ToolCalls {
			if c.ID != "" && !answered[c.ID] && !seen[c.ID] {
				seen[c.ID] = true
				out = append(out, c.ID)
			}
		}
	}
	return out
}

// MovedPastBy reports whether a request whose unanswered calls (Unanswered)
// are unanswered moved past g: it shows every call of g, and answers none.
// A request that answers even one of them is a continuation of g (complete
// or not), judged by the continuation's own rules; one that shows only some
// of g's calls is not trusted to be g's conversation.
func MovedPastBy(g Group, unanswered map[string]bool) bool {
	if len(g.Calls) == 0 {
		return false
	}
	for _, c := range g.Calls {
		if !unanswered[c.PublicID] {
			return false
		}
	}
	return true
}
