package app

import (
	"strings"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
)

// toolsHashOf is the tools binding of a group or an anchor: the request's
// tool definitions and the API it came through, not its tool_choice.
func toolsHashOf(req chat.Request) (string, error) {
	return canon.ToolsBinding(req.API, req.Tools)
}

// legacyToolsHashOf is the tools hash an earlier build stored for a chat
// completions group (tool definitions and tool_choice); "" for other APIs,
// which earlier builds did not serve.
func legacyToolsHashOf(req chat.Request) (string, error) {
	if req.API != "" {
		return "", nil
	}
	return canon.ToolsHash(req.Tools, req.ToolChoice)
}

// publicCallID is the public id of an issued tool call as the request's API
// shows it: the Messages API's are "toolu_" ids like Anthropic's own
// ("toolu_pmn_…"), the others keep "call_pmn_…". The random part is the same
// CSPRNG draw either way.
func publicCallID(api, id string) string {
	if api == "messages" {
		return "toolu_" + strings.TrimPrefix(id, "call_")
	}
	return id
}
