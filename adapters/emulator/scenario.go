package emulator

import "sort"

// Scenario names (the value of a "#scenario=<name>" directive).
const (
	ScenarioAuthFailure      = "auth_failure"       // 401
	ScenarioForbidden        = "forbidden"          // 403
	ScenarioRateLimited      = "rate_limited"       // 429 with Retry-After: 7
	ScenarioRedirect         = "redirect"           // 302 to https://example.invalid/login
	ScenarioServerError      = "server_error"       // 503
	ScenarioJSON200          = "json_200"           // 200 with an application/json error body
	ScenarioDropAfterRequest = "drop_after_request" // body read, then the connection is closed, no response
	ScenarioQuotaExhausted   = "quota_exhausted"    // failure FORBIDDEN with the monthly-credit userMessage
	ScenarioQuotaUsageState  = "quota_usage_state"  // usage with usageState EXCEEDED and no cycle, then EOF
	ScenarioTruncatedFrame   = "truncated_frame"    // text chunks, then half a frame, then EOF
	ScenarioAmbiguousEOF     = "ambiguous_eof"      // text chunks, then EOF (no usage, no [DONE])
	ScenarioEmptyStream      = "empty_stream"       // conversation + usage, no output, normal end
	ScenarioFailureAfterText = "failure_after_text" // text chunks, then a failure, then EOF
	ScenarioUnknownEvent     = "unknown_event"      // text, then a mysteryEvent, then the normal end
	ScenarioModelMismatch    = "model_mismatch"     // the normal turn labelled SOME_OTHER_MODEL
	ScenarioSlowStream       = "slow_stream"        // the normal turn with SlowDelay between events
	ScenarioDataAfterDone    = "data_after_done"    // the normal turn, [DONE], then one more textChunk
	ScenarioLoopApproval     = "loop_approval"      // usage, then a loopApprovalChunk, normal end
	ScenarioToolCallNoID     = "tool_call_no_id"    // the normal turn; tool call entries carry no id

	// The service as the newer public evidence saw it (docs/UPSTREAM.md,
	// "The service, round 3"), each with its source.
	//
	// firewall_block: a 403 whose body is Cloudflare's HTML block page, with
	// Server: cloudflare, Cf-Ray and Cf-Mitigated (ps2Api
	// internal/provider/errors.go:109-113, router_test.go:152-166).
	ScenarioFirewallBlock = "firewall_block"
	// usage_blocked: a usage event with usageState BLOCKED, then the end
	// (ps2Api internal/provider/sse.go:133-136, router_test.go:299).
	ScenarioUsageBlocked = "usage_blocked"
	// quota_usage_cycle: ps2Api's full usage event (every field of its
	// ossfunc_test.go:37 fixture) with usageState EXCEEDED, then the end.
	ScenarioQuotaUsageCycle = "quota_usage_cycle"
	// usage_full_fields: the normal turn whose usage event carries every
	// field of that fixture, usageState AVAILABLE.
	ScenarioUsageFullFields = "usage_full_fields"
	// empty_done: conversation + usage, then [DONE], on either strategy:
	// the metadata-only stream that ends cleanly (ps2Api stream.go
	// streamInternal comment; 529 doc §3.1, measured 2026-08-27).
	ScenarioEmptyDone = "empty_done"
	// rate_window_spent: the normal turn, whose answer carries the service's
	// rate-limit headers saying no request remains until a reset 59 s away
	// (X-RateLimit-Limit: 30, X-RateLimit-Remaining: 0, X-RateLimit-Reset in
	// epoch milliseconds, RateLimit-Policy: 30;w=60; the shape of ps2Api
	// internal/provider/ossfunc_test.go:43, whose reset falls 59 s after its
	// "now").
	ScenarioRateWindowSpent = "rate_window_spent"

	// Response-side variants of the normal turn (docs/UPSTREAM.md): each
	// changes one thing the public projects' fixtures show.
	ScenarioUsageAbsent      = "usage_absent"                      // no usage event; EOF after the output
	ScenarioUsageFirst       = "usage_first"                       // the usage event before the output, none after it (the strict default on web_session)
	ScenarioUsageLast        = "usage_last"                        // usage after the last output (the strict default on access_token)
	ScenarioDoneEvent        = "done_event"                        // a {"eventType":"done"} event ends the stream (web_session: in place of [DONE])
	ScenarioConvOnChunk      = "conversation_on_chunk"             // no conversation event; the id rides on the first output chunk
	ScenarioContinuationNoID = "continuation_without_conversation" // a continuation stream names no conversation at all
	ScenarioLateToolName     = "late_tool_name"                    // a call's name arrives on its second chunk
	ScenarioEmptyArguments   = "empty_arguments"                   // a call without parameters has "" arguments
	ScenarioNoDoneMarker     = "no_done_marker"                    // no [DONE] (on web_session: EOF after the output)
	ScenarioObservedStream   = "observed_stream"                   // every change of the observed profile at once

	// Answers to a structured-output request (the gateway's instruction at
	// the end of the query) other than the valid value built from the schema.
	// They persist through the tool loop the query starts, so its final
	// answer is the one changed.
	ScenarioStructuredInvalidJSON = "structured_invalid_json"     // the valid value cut short by one byte
	ScenarioStructuredViolation   = "structured_schema_violation" // the first required property of the wrong type (or the wrong root type)
	ScenarioStructuredProse       = "structured_prose"            // the valid value with a sentence before and after it
	ScenarioStructuredRefusal     = "structured_refusal"          // a refusal in prose, no JSON
	ScenarioStructuredCodeFence   = "structured_code_fence"       // the valid value in a ```json fence
	// structured_lone_surrogate: the valid value with every U+FFFD in it
	// (written or escaped) as the lone surrogate escape \ud800 (without one,
	// \ud800 after its first quote): valid JSON that clients decode
	// differently.
	ScenarioStructuredLoneSurrogate = "structured_lone_surrogate"
)

// Profile names (Config.Profile, `gateway emulator --profile`).
const (
	// ProfileStrict is the default: every request-side constraint the public
	// projects report is enforced, and streams end the way the traces show:
	// on web_session the usage event before the output and an explicit
	// [DONE] after it (ps2Api's 529 doc §2-3.1: all 89 successful web streams
	// of 2026-08-27 ended with [DONE]; its fixtures put usage first); on
	// access_token usage after the output, then [DONE].
	ProfileStrict = "strict"
	// ProfileUsageLastEOF is strict with web_session streams in the order the
	// emulator used before the traces were read: usage after the last output,
	// then EOF, no terminal (what usage_after_output_v1 was written for).
	ProfileUsageLastEOF = "usage_last_eof"
	// ProfileObserved keeps the constraints and answers like the projects'
	// fixtures: no usage event, the conversation id only on an output chunk and
	// absent from continuation streams, late tool names, "" arguments, no
	// [DONE] on either strategy.
	ProfileObserved = "observed"
	// ProfileDoneEvent is strict with a {"eventType":"done"} event at the end of
	// every normal stream: in place of [DONE] on web_session (the other literal
	// of the terminal: ps2Api's 2026-09-17 mock, TT's fixture), before it on
	// access_token.
	ProfileDoneEvent = "done_event"
	// ProfileForbidSchemas is strict and also refuses anyOf and $ref in tool
	// schemas as Forbidden (reported by one project only).
	ProfileForbidSchemas = "forbid_schemas"
)

// shape is how a normal turn's stream is rendered.
type shape struct {
	usage          string // "last", "first" or "absent"
	doneEvent      bool   // a done event ends the stream (on web_session in place of [DONE])
	doneMarker     bool   // the stream ends with [DONE]
	convOnChunk    bool   // the conversation id on the first output chunk instead of a conversation event
	convAbsentCont bool   // continuation streams carry no conversation id
	lateNames      bool
	emptyArgs      bool
}

// profile is a whole behaviour: the shape of normal streams per strategy and
// the request-side extras.
type profile struct {
	web, token    shape
	forbidSchemas bool
}

// The shapes the profiles are made of.
var (
	// tracedWebShape is a web_session stream as ps2Api's traces show it:
	// usage before the output (router_test.go:299-304; the 529 doc's empty
	// streams start with usage), an explicit [DONE] after it (529 doc §2,
	// §3.1, measured 2026-08-27).
	tracedWebShape = shape{usage: "first", doneMarker: true}
	// tokenShape is an access_token stream: usage after the output, then
	// [DONE] (MK server.js:699: the service sends [DONE] itself).
	tokenShape = shape{usage: "last", doneMarker: true}
	// usageLastEOFShape is the web_session order before the traces: usage
	// after the last output, then EOF.
	usageLastEOFShape = shape{usage: "last"}
	observedShape     = shape{usage: "absent", convOnChunk: true, convAbsentCont: true, lateNames: true, emptyArgs: true}
)

var profiles = map[string]profile{
	ProfileStrict:        {web: tracedWebShape, token: tokenShape},
	ProfileUsageLastEOF:  {web: usageLastEOFShape, token: tokenShape},
	ProfileObserved:      {web: observedShape, token: observedShape},
	ProfileDoneEvent:     {web: withDoneEvent(tracedWebShape), token: withDoneEvent(tokenShape)},
	ProfileForbidSchemas: {web: tracedWebShape, token: tokenShape, forbidSchemas: true},
}

func withDoneEvent(sh shape) shape {
	sh.doneEvent = true
	return sh
}

// shapeOf is the profile's shape of a normal stream on the strategy.
func (p profile) shapeOf(strategy string) shape {
	if strategy == StrategyWebSession {
		return p.web
	}
	return p.token
}

// Profiles lists every profile name, sorted.
func Profiles() []string {
	names := make([]string, 0, len(profiles))
	for name := range profiles {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// shapeFor applies a response-side scenario to the profile's shape.
func shapeFor(base shape, scenario string) shape {
	sh := base
	switch scenario {
	case ScenarioUsageAbsent:
		sh.usage = "absent"
	case ScenarioUsageFirst:
		sh.usage = "first"
	case ScenarioUsageLast:
		sh.usage = "last"
	case ScenarioDoneEvent:
		sh.doneEvent = true
	case ScenarioConvOnChunk:
		sh.convOnChunk = true
	case ScenarioContinuationNoID:
		sh.convAbsentCont = true
	case ScenarioLateToolName:
		sh.lateNames = true
	case ScenarioEmptyArguments:
		sh.emptyArgs = true
	case ScenarioNoDoneMarker:
		sh.doneMarker = false
	case ScenarioObservedStream:
		sh = observedShape
	}
	return sh
}

type scenarioKind int

const (
	// scenarioHTTP is answered before the conversation is touched.
	scenarioHTTP scenarioKind = iota + 1
	// scenarioTurn plays the normal turn (text or tool group) with a change.
	scenarioTurn
	// scenarioText runs the turn as a text turn (no tool group) and shapes the stream.
	scenarioText
)

var scenarios = map[string]scenarioKind{
	ScenarioAuthFailure:      scenarioHTTP,
	ScenarioForbidden:        scenarioHTTP,
	ScenarioRateLimited:      scenarioHTTP,
	ScenarioRedirect:         scenarioHTTP,
	ScenarioServerError:      scenarioHTTP,
	ScenarioJSON200:          scenarioHTTP,
	ScenarioDropAfterRequest: scenarioHTTP,
	ScenarioFirewallBlock:    scenarioHTTP,
	ScenarioUsageBlocked:     scenarioText,
	ScenarioQuotaUsageCycle:  scenarioText,
	ScenarioEmptyDone:        scenarioText,
	ScenarioUsageFullFields:  scenarioTurn,
	ScenarioRateWindowSpent:  scenarioTurn,
	ScenarioQuotaExhausted:   scenarioText,
	ScenarioQuotaUsageState:  scenarioText,
	ScenarioTruncatedFrame:   scenarioText,
	ScenarioAmbiguousEOF:     scenarioText,
	ScenarioEmptyStream:      scenarioText,
	ScenarioFailureAfterText: scenarioText,
	ScenarioUnknownEvent:     scenarioText,
	ScenarioLoopApproval:     scenarioText,
	ScenarioModelMismatch:    scenarioTurn,
	ScenarioSlowStream:       scenarioTurn,
	ScenarioDataAfterDone:    scenarioTurn,
	ScenarioToolCallNoID:     scenarioTurn,
	ScenarioUsageAbsent:      scenarioTurn,
	ScenarioUsageFirst:       scenarioTurn,
	ScenarioUsageLast:        scenarioTurn,
	ScenarioDoneEvent:        scenarioTurn,
	ScenarioConvOnChunk:      scenarioTurn,
	ScenarioContinuationNoID: scenarioTurn,
	ScenarioLateToolName:     scenarioTurn,
	ScenarioEmptyArguments:   scenarioTurn,
	ScenarioNoDoneMarker:     scenarioTurn,
	ScenarioObservedStream:   scenarioTurn,

	ScenarioStructuredInvalidJSON: scenarioTurn,
	ScenarioStructuredViolation:   scenarioTurn,
	ScenarioStructuredProse:       scenarioTurn,
	ScenarioStructuredRefusal:     scenarioTurn,
	ScenarioStructuredCodeFence:   scenarioTurn,

	ScenarioStructuredLoneSurrogate: scenarioTurn,
}

// Scenarios lists every scenario name, sorted.
func Scenarios() []string {
	names := make([]string, 0, len(scenarios))
	for name := range scenarios {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
