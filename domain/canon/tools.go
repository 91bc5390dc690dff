package canon

import (
	"strings"

	"github.com/pmgate/pmgate/domain/chat"
)

// ToolsBindingPrefix marks a tools binding of the current form.
const ToolsBindingPrefix = "tools.v2:"

// ToolsBinding is what a tool-call group (and a conversation anchor) binds of
// the request's tools: "tools.v2:" followed by the Hash of
// {"kind":"tools.v2","api":…,"tools":[…]} with the tool definitions in order
// (as in ToolsHash) and the API the request came through ("" for chat
// completions, "responses"), so that a group is continued only through the
// API it was issued through.
//
// Unlike ToolsHash it leaves out tool_choice: that steers one request (a
// client may force a first call with "required" and answer the results with
// "auto"), it does not change which tools the calls belong to. ToolsHash
// remains for records stored by earlier builds.
func ToolsBinding(api string, tools []chat.Tool) (string, error) {
	ts, err := toolValues(tools)
	if err != nil {
		return "", err
	}
	h, err := Hash(map[string]Value{"kind": "tools.v2", "api": api, "tools": ts})
	if err != nil {
		return "", err
	}
	return ToolsBindingPrefix + h, nil
}

// IsToolsBinding reports whether a stored tools hash is of the current form.
func IsToolsBinding(h string) bool { return strings.HasPrefix(h, ToolsBindingPrefix) }
