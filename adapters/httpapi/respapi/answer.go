package respapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/pmgate/pmgate/adapters/httpapi/answer"
	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	"github.com/pmgate/pmgate/adapters/httpapi/sse"
	"github.com/pmgate/pmgate/adapters/httpapi/sse/respsse"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// Env is what the answer to one request needs from the transport.
type Env struct {
	// Now is when the answer is made: the response object's created_at.
	Now time.Time
	// UsageEstimatesOff is the owner's setting: no usage is estimated when
	// the upstream reports none.
	UsageEstimatesOff bool
	// Fail renders a failure after the stream's headers in the route's error
	// shape.
	Fail func(ctx context.Context, err error) (code, message string)
}

// Answer renders the turn tr of the request rr as a response object or the
// Responses event stream, as the request asked.
func Answer(w http.ResponseWriter, ctx context.Context, rr *Request, tr *answer.Reader, env Env) error {
	o := respOutput{req: rr, id: "resp_" + answer.RandText(), created: env.Now.Unix()}
	if rr.Chat.Stream {
		return streamResponse(w, ctx, o, tr, env)
	}
	return completeResponse(w, ctx, o, tr, env)
}

// Object is the response object of a completed turn of rr with no output
// (and no id or date): what a response echoes of the request, which the
// transport's tests pin.
func (rr *Request) Object() ([]byte, error) {
	return json.Marshal(respOutput{req: rr}.object("completed", nil))
}

// respOutput is what a response object needs besides the turn.
type respOutput struct {
	req     *Request
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
		Instructions: rr.instructions, MaxOutputTokens: rr.maxOutput, Metadata: rr.metadata, Model: rr.Chat.Model,
		Output: output, ParallelToolCalls: rr.Chat.ParallelToolCalls, Reasoning: rr.reasoning,
		Temperature: rr.temperature, Text: rr.textEcho(), ToolChoice: rr.toolChoice, Tools: rr.offered,
		TopP: rr.topP, Truncation: "disabled",
	}
	if wirejson.Absent(wirejson.Raw(obj.Metadata).Kind()) {
		obj.Metadata = emptyObject
	}
	if wirejson.Absent(wirejson.Raw(obj.ToolChoice).Kind()) {
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

// callOut is one issued tool call as the Responses API shows it.
type callOut struct {
	itemID    string
	callID    string
	tool      respTool
	arguments strings.Builder
}

// call is the issued call as the stream shows it; a custom tool's input is
// the "input" string of the arguments it was issued with.
func (c *callOut) call() (respsse.Call, error) {
	out := respsse.Call{ItemID: c.itemID, CallID: c.callID, Name: c.tool.name, Namespace: c.tool.namespace,
		Custom: c.tool.custom, Arguments: c.arguments.String()}
	if c.tool.custom {
		input, err := c.customInput()
		if err != nil {
			return respsse.Call{}, err
		}
		out.Input, out.Namespace, out.Arguments = input, "", ""
	}
	return out, nil
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
	return rules.MustJSON(respsse.Message(id, text, status))
}

// completeResponse collects the whole turn and writes one response object;
// any failure before the proven end is a plain error with its status.
func completeResponse(w http.ResponseWriter, ctx context.Context, o respOutput, tr *answer.Reader, env Env) error {
	all, err := answer.Collect(ctx, tr)
	if err != nil {
		return err
	}
	calls := make([]*callOut, len(all.Calls))
	for i, c := range all.Calls {
		calls[i] = &callOut{itemID: "fc_" + answer.RandText(), callID: c.ID, tool: o.toolOf(c.Name)}
		calls[i].arguments.WriteString(c.Arguments)
	}
	var output []json.RawMessage
	if all.Text != "" || len(calls) == 0 {
		output = append(output, messageOf("msg_"+answer.RandText(), all.Text, "completed"))
	}
	for _, c := range calls {
		call, err := c.call()
		if err != nil {
			return err
		}
		output = append(output, call.Item())
	}
	obj := o.object("completed", output)
	u := tr.Usage(o.req.Chat, env.UsageEstimatesOff, w.Header())
	obj.Usage = respUsageOf(u)
	return answer.WriteValue(w, obj, "encode response")
}

// streamResponse renders a turn as the Responses event stream (answer.Drive):
// response.completed comes only after the proven end, a failure after the
// headers is response.failed.
func streamResponse(w http.ResponseWriter, ctx context.Context, o respOutput, tr *answer.Reader, env Env) error {
	return answer.Drive(ctx, tr, &respStream{env: env, o: o, rs: respsse.New(sse.New(w, answer.StreamUsageHeader(env.UsageEstimatesOff)))})
}

// respStream is a turn rendered through the Responses emitter.
type respStream struct {
	env   Env
	o     respOutput
	rs    *respsse.Stream
	calls []*callOut // the calls issued; the last is shown when the next begins, or at the end
}

func (rs *respStream) Opened() bool { return rs.rs.Opened() }

func (rs *respStream) Open() error { return rs.rs.Open(rs.o.object("in_progress", nil)) }

func (rs *respStream) Step(st answer.Step) error {
	if st.Text != "" {
		if !rs.rs.InMessage() {
			if err := rs.rs.OpenMessage("msg_" + answer.RandText()); err != nil {
				return err
			}
		}
		if err := rs.rs.Text(st.Text); err != nil {
			return err
		}
	}
	if c := st.Call; c != nil {
		if st.First {
			if err := rs.closeOutput(); err != nil {
				return err
			}
			rs.calls = append(rs.calls, &callOut{itemID: "fc_" + answer.RandText(), callID: c.ID, tool: rs.o.toolOf(c.Name)})
		}
		rs.calls[c.Index].arguments.WriteString(c.Arguments)
	}
	return nil
}

// closeOutput closes the open message and shows the last call issued as a
// whole: tool calls are released only after the upstream's next call or
// proven end, so nothing is gained by splitting them.
func (rs *respStream) closeOutput() error {
	if err := rs.rs.CloseMessage(); err != nil || len(rs.calls) == 0 {
		return err
	}
	c, err := rs.calls[len(rs.calls)-1].call()
	if err != nil {
		return err
	}
	return rs.rs.ToolCall(c)
}

func (rs *respStream) Finish(ctx context.Context, tr *answer.Reader) error {
	if !rs.rs.Opened() {
		if err := rs.Open(); err != nil {
			return err
		}
	}
	if err := rs.closeOutput(); err != nil {
		return err
	}
	output := rs.rs.Output()
	if len(output) == 0 {
		// An empty answer is still one (empty) message, as in the JSON form.
		output = append(output, messageOf("msg_"+answer.RandText(), "", "completed"))
	}
	obj := rs.o.object("completed", output)
	obj.Usage = respUsageOf(tr.Usage(rs.o.req.Chat, rs.env.UsageEstimatesOff, nil))
	return rs.rs.Complete(obj)
}

func (rs *respStream) Flush() error { return rs.rs.Flush() }

func (rs *respStream) Fail(ctx context.Context, err error) error {
	code, message := rs.env.Fail(ctx, err)
	obj := rs.o.object("failed", rs.rs.Output())
	obj.Error = &respError{Code: code, Message: message}
	return rs.rs.Fail(obj)
}

// textEcho is the response object's "text": the client's, when it asked for a
// structured output, else the plain text format.
func (rr *Request) textEcho() json.RawMessage {
	if rr.text != nil {
		return rr.text
	}
	return textFormat
}
