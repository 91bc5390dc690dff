package chat_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/chat"
)

func TestEstimateIsCeilBytesOverThree(t *testing.T) {
	is := is.New(t)
	is.Equal(chat.EstimateTokens(0), int64(0))
	is.Equal(chat.EstimateTokens(1), int64(1))
	is.Equal(chat.EstimateTokens(3), int64(1))
	is.Equal(chat.EstimateTokens(4), int64(2))

	text, args := "hello", `{"path":"a.go"}`
	req := chat.Request{
		Messages: []chat.Message{{Role: chat.RoleUser, Content: &text},
			{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "toolu_1", Name: "Read", Arguments: args}}}},
		Tools: []chat.Tool{{Name: "Read", Description: "read", Parameters: []byte(`{"type":"object","x":1}`), UpstreamParameters: []byte(`{"type":"object"}`)}},
	}
	// 2 messages × 12 + 5 + (7 + 4 + 15) + tool (4 + 4 + 17, the lowered schema) = 80 bytes.
	is.Equal(chat.EstimateInputTokens(req), int64(27))
	u := chat.Estimate(req, 10)
	is.Equal(*u.PromptTokens, int64(27))
	is.Equal(*u.CompletionTokens, int64(4))
	is.Equal(*u.TotalTokens, int64(31))
}
