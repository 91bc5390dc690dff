package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pmgate/pmgate/adapters/httpapi"
)

// probeClient drives the in-process gateway over HTTP like any client.
type probeClient struct {
	base, key, model string
	hc               *http.Client
}

type wireCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// probeAnswer is what one response held, kept in memory only.
type probeAnswer struct {
	content   string
	calls     []wireCall
	assistant map[string]any // the assistant message to send back
}

// send posts one request and reduces the answer to report fields.
func (c *probeClient) send(ctx context.Context, body map[string]any, kind, choice string) (reportRequest, probeAnswer) {
	q := reportRequest{Kind: kind, ToolChoice: choice, Calls: []reportCall{}, Upstream: []reportDispatch{}}
	q.Stream, _ = body["stream"].(bool)
	start := time.Now()
	defer func() { q.DurationMS = time.Since(start).Milliseconds() }()
	var ans probeAnswer
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/chat/completions", bytes.NewReader(raw))
	if err != nil {
		q.ErrorCode = "internal_error"
		return q, ans
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		q.ErrorCode = "client_cancelled"
		if ctx.Err() == nil {
			q.ErrorCode = "gateway_unreachable"
		}
		q.DurationMS = time.Since(start).Milliseconds()
		return q, ans
	}
	defer resp.Body.Close()
	q.HTTPStatus = resp.StatusCode
	if d := resp.Header.Get(httpapi.ConversationHeader); reportPatterns().fields["*.requests[].disclosure"].MatchString(d) {
		q.Disclosure = d // one of the gateway's disclosures, nothing else
	}
	if resp.StatusCode != http.StatusOK {
		q.ErrorCode = errorCodeOf(resp.Body)
	} else if q.Stream {
		c.readStream(resp.Body, &q, &ans)
	} else {
		c.readJSON(resp.Body, &q, &ans)
	}
	q.TextBytes = len(ans.content)
	for _, call := range ans.calls {
		q.Calls = append(q.Calls, judgeCall(call))
	}
	q.DurationMS = time.Since(start).Milliseconds()
	return q, ans
}

// judgeCall reduces a call to its name (one of the probe's tools, else
// "other") and whether its arguments are an object valid for the schema.
func judgeCall(c wireCall) reportCall {
	rc := reportCall{Name: "other"}
	for _, t := range probeTools {
		if c.Function.Name == t {
			rc.Name = t
		}
	}
	var obj map[string]json.RawMessage
	args := strings.TrimSpace(c.Function.Arguments)
	rc.ArgumentsObject = strings.HasPrefix(args, "{") && json.Unmarshal([]byte(args), &obj) == nil
	rc.ArgumentsValid = rc.ArgumentsObject && len(obj) == 0 // properties {} and additionalProperties false
	return rc
}

func errorCodeOf(r io.Reader) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.NewDecoder(io.LimitReader(r, 1<<20)).Decode(&e) != nil || !reportPatterns().code.MatchString(e.Error.Code) {
		return "unreadable_error"
	}
	return e.Error.Code
}

func (c *probeClient) readJSON(r io.Reader, q *reportRequest, ans *probeAnswer) {
	var resp struct {
		Choices []struct {
			Message struct {
				Content   *string    `json:"content"`
				ToolCalls []wireCall `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(io.LimitReader(r, 16<<20)).Decode(&resp); err != nil || len(resp.Choices) != 1 {
		q.ErrorCode = "unreadable_response"
		return
	}
	ch := resp.Choices[0]
	q.FinishReason = safeFinish(ch.FinishReason)
	if ch.Message.Content != nil {
		ans.content = *ch.Message.Content
	}
	ans.calls = ch.Message.ToolCalls
	ans.assistant = map[string]any{"role": "assistant", "content": ch.Message.Content}
	if len(ch.Message.ToolCalls) > 0 {
		ans.assistant["tool_calls"] = ch.Message.ToolCalls
	}
}

func (c *probeClient) readStream(r io.Reader, q *reportRequest, ans *probeAnswer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var content strings.Builder
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			q.SawDone = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(data), &chunk) != nil {
			q.ErrorCode = "unreadable_response"
			continue
		}
		if chunk.Error != nil {
			q.ErrorCode = "unreadable_error"
			if reportPatterns().code.MatchString(chunk.Error.Code) {
				q.ErrorCode = chunk.Error.Code
			}
		}
		for _, ch := range chunk.Choices {
			if ch.Delta.Content != nil {
				content.WriteString(*ch.Delta.Content)
			}
			if ch.FinishReason != nil {
				q.FinishReason = safeFinish(*ch.FinishReason)
			}
		}
	}
	ans.content = content.String()
	text := ans.content
	ans.assistant = map[string]any{"role": "assistant", "content": text}
}

// safeFinish keeps the OpenAI finish reasons and nothing else.
func safeFinish(s string) string {
	switch s {
	case "stop", "tool_calls", "length", "content_filter":
		return s
	case "":
		return ""
	}
	return "other"
}
