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
	ScenarioQuotaUsageState  = "quota_usage_state"  // usage with usageState EXCEEDED, then EOF
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
)

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
