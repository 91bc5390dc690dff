package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/pmgate/pmgate/app"
)

// pendingRequests is the --measure-pending phase's budget: four gateway
// requests, one upstream dispatch each (the gateway's own refusal of a
// transcript too long to start fresh is not a dispatch: nothing is sent).
const pendingRequests = 4

// The kinds of the phase's requests, in order.
var pendingKinds = [...]string{"pending_first_query", "pending_first_result", "pending_user_query", "pending_late_result"}

// toolCallNotFound is the service's error type of a TOOL_RESPONSE answering
// a call it no longer waits for.
const toolCallNotFound = "TOOL_CALL_NOT_FOUND"

// pendingInstruction opens the phase's first user message; filler follows it
// up to the query limit.
const pendingInstruction = "This is an automated check of a tool-calling gateway. Call the tool probe_alpha first, on its own. " +
	"When you have its result, call the tool probe_beta, on its own. When you have both results, reply with exactly this line " +
	"and nothing else: ALPHA=<result of probe_alpha>;BETA=<result of probe_beta>\nEverything after this line is filler text; ignore it.\n"

// pendingQuery is the user message that goes up while the second call is
// pending, as an agent's summary request does.
const pendingQuery = "Reply with one word."

// pendingMargin is how far below POSTMAN_MAX_QUERY_CHARS the first query
// stays: the transcript after one tool round adds the [User] header, the
// call and its result, far more than this, so it no longer fits a fresh
// conversation.
const pendingMargin = 20

// sentDispatches are the dispatches of a request that reached the upstream.
func sentDispatches(q reportRequest) []reportDispatch {
	var out []reportDispatch
	for _, d := range q.Upstream {
		if !d.NotSent && !d.RefusedByBudget {
			out = append(out, d)
		}
	}
	return out
}

// oneSent is the request's only sent dispatch, when it sent exactly one of
// chatType that completed (or, complete false, whatever its outcome).
func oneSent(q reportRequest, chatType string, complete bool) (reportDispatch, bool) {
	ds := sentDispatches(q)
	if len(ds) != 1 || ds[0].ChatType != chatType || complete && ds[0].Outcome != outcomeComplete {
		return reportDispatch{}, false
	}
	return ds[0], true
}

// pendingResult is what the phase's requests proved, and the step that did
// not go as planned when that is nothing: the first query answered with one
// call F on a fresh conversation; F's result (a TOOL_RESPONSE) answered with
// one call G; the user query continued that conversation from the earlier
// point (a USER_QUERY in it, disclosed continued-from-earlier-point) and
// was answered; then G's result went up as its TOOL_RESPONSE in the
// conversation: answered, the service kept the call (kept); refused with
// TOOL_CALL_NOT_FOUND, it dropped it (dropped); anything else decides
// nothing.
func pendingResult(reqs []reportRequest) (result, unknownAt string) {
	if len(reqs) == 0 {
		return "unknown", "query_limit" // nothing was sent: the limit leaves no room for the instruction
	}
	call := func(q reportRequest, chatType string) bool {
		d, ok := oneSent(q, chatType, true)
		return ok && q.HTTPStatus == http.StatusOK && q.FinishReason == "tool_calls" && len(q.Calls) == 1 &&
			d.ConversationIDPresent == (chatType == "TOOL_RESPONSE")
	}
	for i, step := range []struct{ at, chatType string }{{"first_query", "USER_QUERY"}, {"first_result", "TOOL_RESPONSE"}} {
		if len(reqs) <= i || reqs[i].Kind != pendingKinds[i] || !call(reqs[i], step.chatType) {
			return "unknown", step.at
		}
	}
	if len(reqs) < 3 || reqs[2].Kind != pendingKinds[2] {
		return "unknown", "user_query"
	}
	q := reqs[2]
	if d, ok := oneSent(q, "USER_QUERY", true); !ok || !d.ConversationIDPresent || q.HTTPStatus != http.StatusOK ||
		q.Disclosure != app.DisclosedFromEarlierPoint || len(q.Calls) != 0 {
		return "unknown", "user_query"
	}
	if len(reqs) != 4 || reqs[3].Kind != pendingKinds[3] {
		return "unknown", "late_result"
	}
	q = reqs[3]
	d, ok := oneSent(q, "TOOL_RESPONSE", false)
	switch {
	case !ok || !d.ConversationIDPresent || !d.CallIDsPresent || d.ResultCount != 1:
		return "unknown", "late_result"
	case q.HTTPStatus == http.StatusOK && d.Outcome == outcomeComplete:
		return "kept", ""
	case q.HTTPStatus != http.StatusOK && d.UpstreamErrorType == toolCallNotFound:
		return "dropped", ""
	}
	return "unknown", "late_result"
}

// runPendingPhase measures what a user query in a conversation does to a
// tool call still pending there, as Claude Code's automatic compaction in
// the middle of a tool loop causes it: a first query just under
// POSTMAN_MAX_QUERY_CHARS asks for the two probe tools one after the other
// (call F); F's result is answered with call G; the history up to F's result
// and a new user message, too long to start fresh, goes up in the
// conversation as a USER_QUERY while G is pending; then the whole transcript
// with G's result goes up as G's TOOL_RESPONSE in that conversation. At most
// four requests and four dispatches; nothing is retried, and a step that
// does not go as planned ends the phase.
func runPendingPhase(ctx context.Context, cl *probeClient, pu *probeUpstream, pol reportPolicy, first, second string) *reportPending {
	p := &reportPending{Phase: reportPhase{Ran: true, Requests: []reportRequest{}}}
	began := time.Now()
	pu.begin(pol.PendingMaxDispatches)
	defer func() {
		p.Result, p.UnknownAt = pendingResult(p.Phase.Requests)
		p.Phase.UpstreamDispatches, p.Phase.RefusedDispatches = pu.counts()
		p.Phase.DurationMS = time.Since(began).Milliseconds()
	}()
	size := pol.MaxQueryCharsAtStartup - pendingMargin
	if size < len(pendingInstruction)+pendingMargin {
		p.Phase.Ran = false
		return p
	}
	filler := strings.Repeat("pmgate filler text. ", size/20+1)
	opening := pendingInstruction + filler[:size-len(pendingInstruction)]
	tools := []any{}
	for _, name := range probeTools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
			"name": name, "description": "Returns a short code for the connectivity check.", "parameters": json.RawMessage(probeToolSchema)}})
	}
	send := func(kind string, messages []any, choice string) probeAnswer {
		q, msg := cl.send(ctx, map[string]any{"model": cl.model, "messages": messages, "tools": tools, "tool_choice": choice,
			"parallel_tool_calls": false}, kind, choice)
		q.ToolsOffered = len(probeTools)
		q.Upstream = pu.take()
		p.Phase.Requests = append(p.Phase.Requests, q)
		p.Phase.Turns++
		p.Phase.GatewayRequests++
		return msg
	}
	planned := func() bool {
		_, at := pendingResult(p.Phase.Requests)
		return at == "" || at == [...]string{"first_query", "first_result", "user_query", "late_result"}[len(p.Phase.Requests)]
	}
	answer := func(msg probeAnswer, content string) []any {
		return []any{msg.assistant, map[string]any{"role": "tool", "tool_call_id": msg.calls[0].ID, "content": content}}
	}

	history := []any{userMessage(opening)}
	f := send(pendingKinds[0], history, "required")
	p.Phase.Requests[0].QueryChars = size
	if !planned() {
		return p
	}
	history = append(history, answer(f, first)...)
	g := send(pendingKinds[1], history, "auto")
	if !planned() {
		return p
	}
	// The history before G with a new user message, as Claude Code's summary
	// request sends it: too long to start fresh, it continues the
	// conversation from the earlier point while G is pending there. Its
	// tool_choice none asks for text (the tools stay: the binding is unchanged).
	send(pendingKinds[2], append(append([]any(nil), history...), userMessage(pendingQuery)), "none")
	if !planned() {
		return p
	}
	send(pendingKinds[3], append(history, answer(g, second)...), "auto")
	return p
}
