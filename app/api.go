package app

import (
	"pmgate/domain/canon"
	"pmgate/domain/chat"
)

// toolsHashOf is the tools hash a group is bound to: the request's tools and
// tool choice, and the API it came through (chat completions or responses).
func toolsHashOf(req chat.Request) (string, error) {
	h, err := canon.ToolsHash(req.Tools, req.ToolChoice)
	if err != nil {
		return "", err
	}
	return canon.APIToolsHash(req.API, h)
}
