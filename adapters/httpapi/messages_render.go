package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/msgsse"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// agentHeader names a Claude Code subagent: its requests carry a fresh id
// per spawn, and its conversations must never continue another agent's.
const agentHeader = "x-claude-code-agent-id"

// handleMessages serves POST /v1/messages: one turn (serveTurn) of the
// request translated from the Messages API, rendered as a Message or the
// Messages event stream.
func (s *server) handleMessages(w http.ResponseWriter, r *http.Request) error {
	if agent := r.Header.Get(agentHeader); agent != "" {
		r = r.WithContext(scopePrincipal(r.Context(), "agent:"+agent))
	}
	return serveTurn(s, w, r, "messages", func(body []byte) (*msgRequest, chat.Request, error) {
		mr, err := s.decodeMessagesRequest(body, slotFrom(r.Context()).allowsModel)
		if err != nil {
			return nil, chat.Request{}, err
		}
		return &mr, mr.chat, nil
	}, func(w http.ResponseWriter, r *http.Request, mr *msgRequest, tr *answer.Reader) error {
		o := msgOutput{req: mr, id: "msg_" + answer.RandText()}
		if mr.chat.Stream {
			return s.streamMessage(w, r, o, tr)
		}
		return s.completeMessage(w, r, o, tr)
	})
}

// handleCountTokens serves POST /v1/messages/count_tokens: the gateway's
// input estimate of the request (the formula of the usage estimates, which
// errs high), never 0. With estimates off there is nothing honest to count:
// 404, and Claude Code estimates locally.
func (s *server) handleCountTokens(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.UsageEstimatesOff {
		return errNoRoute
	}
	body, err := s.readJSON(w, r)
	if err != nil {
		return err
	}
	mr, err := s.decodeCountRequest(body, slotFrom(r.Context()).allowsModel)
	if err != nil {
		return err
	}
	w.Header().Set(answer.UsageHeader, "estimated")
	return writeValue(w, map[string]int64{"input_tokens": max(mr.estimate, 1)}, "count tokens")
}

// msgOutput is what a Message needs besides the turn.
type msgOutput struct {
	req *msgRequest
	id  string
}

func msgUsageOf(u *chat.Usage) msgsse.Usage {
	var m msgsse.Usage
	if u != nil {
		if u.PromptTokens != nil {
			m.InputTokens = *u.PromptTokens
		}
		if u.CompletionTokens != nil {
			m.OutputTokens = *u.CompletionTokens
		}
	}
	return m
}

// errNothingProven refuses a turn that ended with neither text nor tool
// calls: an empty end_turn would stop Claude Code silently. The rule itself
// belongs to the completion machine (domain/completion: a stream that ends
// before any output, by EOF, [DONE] or a done event, is
// upstream_empty_stream on every API), so an upstream stream never gets here;
// this is the Messages renderer's own guard, because its grammar has no
// message without a content block.
func errNothingProven() error {
	return errs.Newf(errs.UpstreamEmptyStream, "the turn ended with no text and no tool calls")
}

// completeMessage collects the whole turn and writes one Message; any
// failure before the proven end is a plain error with its status.
func (s *server) completeMessage(w http.ResponseWriter, r *http.Request, o msgOutput, tr *answer.Reader) error {
	all, err := answer.Collect(r.Context(), tr)
	if err != nil {
		return err
	}
	if all.Text == "" && len(all.Calls) == 0 {
		return errNothingProven()
	}
	sc := answer.NewStopScanner(o.req.stops)
	text := sc.Feed(all.Text) + sc.Flush()
	var content []json.RawMessage
	if text != "" {
		content = append(content, mustJSON(msgsse.TextBlock{Type: "text", Text: text}))
	}
	uses := 0
	if sc.Matched == nil {
		for _, c := range all.Calls {
			content = append(content, mustJSON(msgsse.ToolUseBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: toolInput(c.Arguments)}))
			uses++
		}
	}
	if content == nil {
		content = []json.RawMessage{}
	}
	reason := msgsse.StopReason(sc.Matched, uses)
	u := tr.Usage(o.req.chat, s.cfg.UsageEstimatesOff, w.Header())
	return writeValue(w, msgsse.Message{ID: o.id, Type: "message", Role: "assistant", Model: o.req.chat.Model, Content: content,
		StopReason: &reason, StopSequence: sc.Matched, Usage: msgUsageOf(u)}, "encode message")
}

// toolInput is a tool call's arguments as the input object ("" is {}: the
// app proved the arguments are a JSON object or empty).
func toolInput(args string) json.RawMessage {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}

// anthropicError is the Anthropic error shape. code and param are pmgate's
// stable error code and the offending parameter (extra members the SDKs
// ignore); code is also sent as the x-pmgate-error-code header.
type anthropicError struct {
	Type      string              `json:"type"`
	Error     anthropicErrorInner `json:"error"`
	RequestID string              `json:"request_id"`
}

type anthropicErrorInner struct {
	Type    string  `json:"type"`
	Message string  `json:"message"`
	Code    string  `json:"code"`
	Param   *string `json:"param,omitempty"`
}

// errorCodeHeader carries the stable pmgate code of every error on the
// Anthropic routes.
const errorCodeHeader = "x-pmgate-error-code"

// anthropicStatus maps a catalog status to the status and error type
// Anthropic pairs (400 invalid_request_error, 401 authentication_error, 402
// billing_error, 403 permission_error, 404 not_found_error, 413
// request_too_large, 429 rate_limit_error, 500 api_error, 504
// timeout_error, 529 overloaded_error), for any code, including codes added
// later: by status alone. Other client errors become 400 (a deterministic
// 409 above all: Claude Code and the SDKs retry 409); 408 and 504 become
// 504, 503 becomes 529, other server errors 500. The pmgate code keeps
// what the status no longer says.
func anthropicStatus(status int) (int, string) {
	switch status {
	case http.StatusUnauthorized:
		return status, "authentication_error"
	case http.StatusPaymentRequired:
		return status, "billing_error"
	case http.StatusForbidden:
		return status, "permission_error"
	case http.StatusNotFound:
		return status, "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return status, "request_too_large"
	case http.StatusTooManyRequests:
		return status, "rate_limit_error"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return http.StatusGatewayTimeout, "timeout_error"
	case http.StatusServiceUnavailable, statusOverloaded:
		return statusOverloaded, "overloaded_error"
	}
	if status >= 500 {
		return http.StatusInternalServerError, "api_error"
	}
	return http.StatusBadRequest, "invalid_request_error"
}

// statusOverloaded is Anthropic's 529 (overloaded_error).
const statusOverloaded = 529

// anthropicBody renders err in the Anthropic shape, with the status to
// answer and the catalog entry (for a stream's error event).
func anthropicBody(ctx context.Context, err error) (anthropicError, errs.Entry, int) {
	f := failureIn(ctx, shapeAnthropic, err)
	return anthropicOf(ctx, f), f.e, f.status
}

// anthropicOf is a failure in the Anthropic shape (f.status is already
// Anthropic's, which anthropicStatus maps to itself). A refusal of the
// request reads like the API's own: "<param>: <detail>".
func anthropicOf(ctx context.Context, f failure) anthropicError {
	_, typ := anthropicStatus(f.status)
	msg := f.public.Error.Message
	var re *rules.Refusal
	if f.e.Code != errs.InternalError && errors.As(f.err, &re) && re.Detail() != "" && re.Param() != "" {
		msg = re.Param() + ": " + re.Detail()
	}
	return anthropicError{Type: "error", Error: anthropicErrorInner{Type: typ, Message: msg, Code: f.public.Error.Code, Param: f.public.Error.Param},
		RequestID: RequestID(ctx)}
}

// noteError records the code of a failure for the access log and logs an
// internal error (redacted).
func (s *server) noteError(ctx context.Context, e errs.Entry, err error) {
	infoFrom(ctx).code = e.Code
	if e.Code == errs.InternalError {
		s.log.LogAttrs(ctx, slog.LevelError, "internal error", slog.String("error", errs.Redact(err)))
	}
}
