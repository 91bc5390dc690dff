package testkit

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/pmgate/pmgate/app"
	"github.com/pmgate/pmgate/domain/chat"
)

// Drain reads a turn to its end under ctx and closes it: the deltas, and the
// error that ended it (nil at a proven end).
func Drain(ctx context.Context, turn app.Turn) ([]app.Delta, error) {
	defer turn.Close()
	var ds []app.Delta
	for {
		d, err := turn.Next(ctx)
		if errors.Is(err, io.EOF) {
			return ds, nil
		}
		if err != nil {
			return ds, err
		}
		ds = append(ds, d)
	}
}

// Echo builds a client's next request: the history, the assistant turn as
// the client assembled it from the deltas, and one result per tool call
// ("<result>:<tool name>").
func Echo(history []chat.Message, ds []app.Delta, result string) []chat.Message {
	var text strings.Builder
	var calls []chat.ToolCall
	for _, d := range ds {
		text.WriteString(d.Text)
		if tc := d.ToolCall; tc != nil {
			if tc.ID != "" {
				calls = append(calls, chat.ToolCall{ID: tc.ID, Name: tc.Name})
			}
			calls[tc.Index].Arguments += tc.Arguments
		}
	}
	a := chat.Message{Role: chat.RoleAssistant, ToolCalls: calls}
	if text.Len() > 0 {
		s := text.String()
		a.Content = &s
	}
	out := append(append([]chat.Message(nil), history...), a)
	for _, c := range calls {
		content := result + ":" + c.Name
		out = append(out, chat.Message{Role: chat.RoleTool, ToolCallID: c.ID, Content: &content})
	}
	return out
}
