package answer

import (
	"encoding/json"
	"strings"

	"github.com/pmgate/pmgate/domain/errs"
)

// ToolInput is a tool call's arguments as the input object ("" is {}: the
// app proved the arguments are a JSON object or empty).
func ToolInput(args string) json.RawMessage {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}

// ErrNothingProven refuses a turn that ended with neither text nor tool
// calls: an empty end_turn would stop Claude Code silently. The rule itself
// belongs to the completion machine (domain/completion: a stream that ends
// before any output, by EOF, [DONE] or a done event, is
// upstream_empty_stream on every API), so an upstream stream never gets here;
// this is the Messages and Gemini answers' own guard, because their
// grammars have no message without a content block.
func ErrNothingProven() error {
	return errs.Newf(errs.UpstreamEmptyStream, "the turn ended with no text and no tool calls")
}
