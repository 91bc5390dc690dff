package app

import (
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
