package chat

// Token estimates (docs/MESSAGES.md, "Usage"). The upstream rarely reports
// token counts; clients such as Claude Code size their context from usage,
// so when the upstream reports none the gateway may show an estimate, always
// marked as one. The formula is deliberately simple and errs high:
//
//	tokens = ceil(bytes / BytesPerToken)
//
// over the UTF-8 bytes of what the turn carries. Input: every message's
// content, tool calls' names and arguments and tool-call ids, plus
// MessageOverheadBytes per message, and every tool's name, description and
// schema (the lowered schema the upstream receives). Output: the text and
// the tool calls' names and arguments received from the upstream.
// BytesPerToken is 3, below the ~4 bytes per token of English text, so code
// and JSON (denser in tokens) are not undercounted.
const (
	BytesPerToken        = 3
	MessageOverheadBytes = 12
)

// EstimateTokens is ceil(bytes / BytesPerToken); 0 bytes are 0 tokens.
func EstimateTokens(bytes int) int64 {
	if bytes <= 0 {
		return 0
	}
	return int64((bytes + BytesPerToken - 1) / BytesPerToken)
}

// EstimateInputTokens estimates the input of req (never 0 for a request
// with messages).
func EstimateInputTokens(req Request) int64 {
	n := 0
	for _, m := range req.Messages {
		n += MessageOverheadBytes + len(m.Name) + len(m.ToolCallID)
		if m.Content != nil {
			n += len(*m.Content)
		}
		for _, c := range m.ToolCalls {
			n += len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description)
		if s, ok := t.Lowered(); ok && s != nil {
			n += len(s)
		} else {
			n += len(t.Parameters)
		}
	}
	return EstimateTokens(n)
}

// Estimate is the usage of a turn as estimated from its request and the
// output bytes received. The caller must mark it as an estimate wherever it
// shows it.
func Estimate(req Request, outputBytes int) *Usage {
	in, out := EstimateInputTokens(req), EstimateTokens(outputBytes)
	total := in + out
	return &Usage{PromptTokens: &in, CompletionTokens: &out, TotalTokens: &total}
}
