package httpapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/ports"
)

// handleResponses serves POST /v1/responses: one turn (serveTurn) of the
// request translated from the Responses API, rendered as a response object or
// the Responses event stream.
func (s *server) handleResponses() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveTurn(s, w, r, "input", func(body []byte) (*respRequest, chat.Request, error) {
			rr, err := s.decodeResponsesRequest(body, slotFrom(r.Context()).allowsModel)
			if err != nil {
				return nil, chat.Request{}, err
			}
			if len(rr.dropped) > 0 {
				// Hosted tools the upstream cannot run are left out, not
				// refused; the response's "tools" lists only what was offered.
				s.log.LogAttrs(r.Context(), slog.LevelInfo, "responses: built-in tools not offered upstream",
					slog.Any("tool_types", rr.dropped))
			}
			return &rr, rr.chat, nil
		}, func(w http.ResponseWriter, r *http.Request, rr *respRequest, tr *turnReader) {
			o := respOutput{req: rr, id: "resp_" + randText(), created: s.now().Unix()}
			if rr.chat.Stream {
				s.streamResponse(w, r, o, tr)
			} else {
				s.completeResponse(w, r, o, tr)
			}
		})
	})
}

// respOutput is what a response object needs besides the turn.
type respOutput struct {
	req     *respRequest
	id      string
	created int64
}

// responseObject is the Responses API's response object. Echoed settings are
// the client's own values (null when it sent none); nothing is invented.
type responseObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Error              *respError        `json:"error"`
	IncompleteDetails  *struct{}         `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    json.RawMessage   `json:"max_output_tokens"`
	Metadata           json.RawMessage   `json:"metadata"`
	Model              string            `json:"model"`
	Output             []json.RawMessage `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          json.RawMessage   `json:"reasoning"`
	Store              bool              `json:"store"`
	Temperature        json.RawMessage   `json:"temperature"`
	Text               json.RawMessage   `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []json.RawMessage `json:"tools"`
	TopP               json.RawMessage   `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *respUsage        `json:"usage"`
	User               *string           `json:"user"`
}

type respError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type respUsage struct {
	InputTokens  *int64 `json:"input_tokens,omitempty"`
	OutputTokens *int64 `json:"output_tokens,omitempty"`
	TotalTokens  *int64 `json:"total_tokens,omitempty"`
}

var (
	textFormat  = json.RawMessage(`{"format":{"type":"text"}}`)
	autoChoice  = json.RawMessage(`"auto"`)
	emptyObject = json.RawMessage(`{}`)
)

func respUsageOf(u *chat.Usage) *respUsage {
	if u == nil || !u.Reported() {
		return nil
	}
	return &respUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
}

// object returns the response object in a status, with output items.
func (o respOutput) object(status string, output []json.RawMessage) responseObject {
	rr := o.req
	obj := responseObject{
		ID: o.id, Object: "response", CreatedAt: o.created, Status: status,
		Instructions: rr.instructions, MaxOutputTokens: rr.maxOutput, Metadata: rr.metadata, Model: rr.chat.Model,
		Output: output, ParallelToolCalls: rr.chat.ParallelToolCalls, Reasoning: rr.reasoning,
		Temperature: rr.temperature, Text: rr.textEcho(), ToolChoice: rr.toolChoice, Tools: rr.offered,
		TopP: rr.topP, Truncation: "disabled",
	}
	if absent(obj.Metadata) {
		obj.Metadata = emptyObject
	}
	if absent(obj.ToolChoice) {
		obj.ToolChoice = autoChoice
	}
	if obj.Output == nil {
		obj.Output = []json.RawMessage{}
	}
	if obj.Tools == nil {
		obj.Tools = []json.RawMessage{}
	}
	if rr.user != "" {
		u := rr.user
		obj.User = &u
	}
	return obj
}

// Output items.
type messageItem struct {
	Type    string     `json:"type"`
	ID      string     `json:"id"`
	Status  string     `json:"status"`
	Role    string     `json:"role"`
	Content []textPart `json:"content"`
}

type textPart struct {
	Type        string     `json:"type"`
	Text        string     `json:"text"`
	Annotations []struct{} `json:"annotations"`
}

type functionCallItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

type customCallItem struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	Input  string `json:"input"`
	Status string `json:"status,omitempty"`
}

// callOut is one issued tool call as the Responses API shows it.
type callOut struct {
	itemID    string
	callID    string
	tool      respTool
	arguments strings.Builder
}

// item renders the call's output item; a custom tool's input is the "input"
// string of the arguments it was issued with.
func (c *callOut) item(status string) (json.RawMessage, error) {
	if c.tool.custom {
		input, err := c.customInput()
		if err != nil {
			return nil, err
		}
		return mustJSON(c.customItem(input, status)), nil
	}
	return mustJSON(c.functionItem(c.arguments.String(), status)), nil
}

func (c *callOut) functionItem(arguments, status string) functionCallItem {
	return functionCallItem{Type: "function_call", ID: c.itemID, CallID: c.callID, Name: c.tool.name,
		Namespace: c.tool.namespace, Arguments: arguments, Status: status}
}

func (c *callOut) customItem(input, status string) customCallItem {
	return customCallItem{Type: "custom_tool_call", ID: c.itemID, CallID: c.callID, Name: c.tool.name, Input: input, Status: status}
}

// customInput is the "input" string of a custom tool call's arguments.
func (c *callOut) customInput() (string, error) {
	var args struct {
		Input *string `json:"input"`
	}
	if err := json.Unmarshal([]byte(c.arguments.String()), &args); err != nil || args.Input == nil {
		return "", errs.Newf(errs.UpstreamMalformedEvent, "a custom tool call has no string input")
	}
	return *args.Input, nil
}

func (o respOutput) toolOf(chatName string) respTool {
	if t, ok := o.req.tools[chatName]; ok {
		return t
	}
	return respTool{name: chatName}
}

func messageOf(id, text, status string) json.RawMessage {
	return mustJSON(messageItem{Type: "message", ID: id, Status: status, Role: "assistant",
		Content: []textPart{{Type: "output_text", Text: text, Annotations: []struct{}{}}}})
}

// completeResponse collects the whole turn and writes one response object;
// any failure before the proven end is a plain error with its status.
func (s *server) completeResponse(w http.ResponseWriter, r *http.Request, o respOutput, tr *turnReader) {
	all, err := collect(r.Context(), tr)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	calls := make([]*callOut, len(all.calls))
	for i, c := range all.calls {
		calls[i] = &callOut{itemID: "fc_" + randText(), callID: c.ID, tool: o.toolOf(c.Name)}
		calls[i].arguments.WriteString(c.Arguments)
	}
	var output []json.RawMessage
	if all.text != "" || len(calls) == 0 {
		output = append(output, messageOf("msg_"+randText(), all.text, "completed"))
	}
	for _, c := range calls {
		item, err := c.item("completed")
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		output = append(output, item)
	}
	obj := o.object("completed", output)
	u, estimated := s.usageOfTurn(o.req.chat, tr)
	s.markUsage(r.Context(), w.Header(), u, estimated)
	obj.Usage = respUsageOf(u)
	s.writeValue(w, r, obj, "encode response")
}

// respStream writes the Responses event stream: "event: <type>" and one
// data line per event, each with its sequence number.
type respStream struct {
	out *sse
	seq int
}

func (rs *respStream) emit(typ string, fields map[string]any) error {
	fields["type"] = typ
	fields["sequence_number"] = rs.seq
	rs.seq++
	return rs.out.holdNamed(typ, fields)
}

// streamResponse renders a turn as the Responses event stream. Headers wait
// for the first delta, so a failure before any output is a plain error with
// its status. A failure after that is response.failed and the end of the
// stream; response.completed comes only after the proven end.
func (s *server) streamResponse(w http.ResponseWriter, r *http.Request, o respOutput, tr *turnReader) {
	var rs *respStream
	var out *sse // rs.out, for the hook
	ctx := ports.WithBeforeWait(r.Context(), waitHook(&out))
	var output []json.RawMessage
	var calls []*callOut
	var text strings.Builder
	msgID, msgIndex := "", -1
	ok := true
	emit := func(typ string, f map[string]any) {
		if ok && rs.emit(typ, f) != nil {
			infoFrom(ctx).code = errs.ClientCancelled
			ok = false
		}
	}
	// end writes what emit held as the stream's last write (sse.end).
	end := func() {
		if ok && out.end() != nil {
			infoFrom(ctx).code = errs.ClientCancelled
			ok = false
		}
	}
	start := func() {
		s.markStreamUsage(w.Header())
		out = newSSE(w)
		rs = &respStream{out: out}
		emit("response.created", map[string]any{"response": o.object("in_progress", nil)})
		emit("response.in_progress", map[string]any{"response": o.object("in_progress", nil)})
	}
	closeText := func() {
		if msgIndex < 0 {
			return
		}
		t := text.String()
		emit("response.output_text.done", map[string]any{"item_id": msgID, "output_index": msgIndex, "content_index": 0, "text": t, "logprobs": []struct{}{}})
		emit("response.content_part.done", map[string]any{"item_id": msgID, "output_index": msgIndex, "content_index": 0,
			"part": textPart{Type: "output_text", Text: t, Annotations: []struct{}{}}})
		item := messageOf(msgID, t, "completed")
		emit("response.output_item.done", map[string]any{"output_index": msgIndex, "item": item})
		output[msgIndex] = item
		msgIndex = -1
	}
	fail := func(err error) {
		body := s.streamError(ctx, err)
		obj := o.object("failed", output)
		obj.Error = &respError{Code: body.Error.Code, Message: body.Error.Message}
		emit("response.failed", map[string]any{"response": obj})
		end()
	}
	for ok {
		st, err := tr.next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			if rs == nil {
				s.writeError(w, r, err)
				return
			}
			fail(err)
			return
		}
		if rs == nil {
			start()
		}
		if st.text != "" {
			if msgIndex < 0 {
				msgID, msgIndex = "msg_"+randText(), len(output)
				text.Reset()
				item := mustJSON(messageItem{Type: "message", ID: msgID, Status: "in_progress", Role: "assistant", Content: []textPart{}})
				output = append(output, item)
				emit("response.output_item.added", map[string]any{"output_index": msgIndex, "item": item})
				emit("response.content_part.added", map[string]any{"item_id": msgID, "output_index": msgIndex, "content_index": 0,
					"part": textPart{Type: "output_text", Text: "", Annotations: []struct{}{}}})
			}
			text.WriteString(st.text)
			emit("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": msgIndex, "content_index": 0, "delta": st.text, "logprobs": []struct{}{}})
		}
		if c := st.call; c != nil {
			if st.first {
				closeText()
				if len(calls) > 0 {
					if err := s.finishCall(emit, calls[len(calls)-1], &output); err != nil {
						fail(err)
						return
					}
				}
				calls = append(calls, &callOut{itemID: "fc_" + randText(), callID: c.ID, tool: o.toolOf(c.Name)})
			}
			calls[c.Index].arguments.WriteString(c.Arguments)
		}
	}
	if !ok {
		return
	}
	if rs == nil {
		start()
	}
	closeText()
	if len(calls) > 0 {
		if err := s.finishCall(emit, calls[len(calls)-1], &output); err != nil {
			fail(err)
			return
		}
	}
	if len(output) == 0 {
		// An empty answer is still one (empty) message, as in the JSON form.
		output = append(output, messageOf("msg_"+randText(), "", "completed"))
	}
	obj := o.object("completed", output)
	obj.Usage = respUsageOf(s.streamUsage(ctx, o.req.chat, tr))
	emit("response.completed", map[string]any{"response": obj})
	end()
}

// finishCall emits one tool call as a whole: added, its arguments (or a
// custom tool's input) in one delta, done. Tool calls are released only after
// the upstream's proven end, so nothing is gained by splitting them.
func (s *server) finishCall(emit func(string, map[string]any), c *callOut, output *[]json.RawMessage) error {
	done, err := c.item("completed")
	if err != nil {
		return err
	}
	idx := len(*output)
	if c.tool.custom {
		input, _ := c.customInput() // item checked it
		emit("response.output_item.added", map[string]any{"output_index": idx, "item": c.customItem("", "in_progress")})
		emit("response.custom_tool_call_input.delta", map[string]any{"item_id": c.itemID, "output_index": idx, "delta": input})
		emit("response.custom_tool_call_input.done", map[string]any{"item_id": c.itemID, "output_index": idx, "input": input})
	} else {
		args := c.arguments.String()
		emit("response.output_item.added", map[string]any{"output_index": idx, "item": c.functionItem("", "in_progress")})
		emit("response.function_call_arguments.delta", map[string]any{"item_id": c.itemID, "output_index": idx, "delta": args})
		emit("response.function_call_arguments.done", map[string]any{"item_id": c.itemID, "output_index": idx, "arguments": args})
	}
	emit("response.output_item.done", map[string]any{"output_index": idx, "item": done})
	*output = append(*output, done)
	return nil
}

// textEcho is the response object's "text": the client's, when it asked for a
// structured output, else the plain text format.
func (rr *respRequest) textEcho() json.RawMessage {
	if rr.text != nil {
		return rr.text
	}
	return textFormat
}
