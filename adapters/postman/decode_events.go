package postman

// evType is a known upstream event type (docs/UPSTREAM.md). Event types print
// unredacted: only names of this closed list are ever logged.
type evType uint8

const (
	evNone evType = iota
	evUnknown
	evDone
	evConversation
	evTextChunk
	evThinkingChunk
	evThinkingComplete
	evPing
	evInfo
	evPlanningChunk
	evProgressUpdate
	evTodoChunk
	evStreamingFormat
	evNotification
	evUsageUpdate
	evUsage
	evFailure
	evError
	evResultFailure
	evToolCallChunk
	evLoopApprovalChunk
	evDoneEvent
)

// This file is the closed list of upstream event types the decoder knows.

var evNames = [...]string{
	evNone:              "",
	evUnknown:           "unknown",
	evDone:              "[DONE]",
	evConversation:      "conversation",
	evTextChunk:         "textChunk",
	evThinkingChunk:     "thinkingChunk",
	evThinkingComplete:  "thinkingComplete",
	evPing:              "ping",
	evInfo:              "info",
	evPlanningChunk:     "planningChunk",
	evProgressUpdate:    "progressUpdate",
	evTodoChunk:         "todoChunk",
	evStreamingFormat:   "streamingFormat",
	evNotification:      "notification",
	evUsageUpdate:       "usageUpdate",
	evUsage:             "usage",
	evFailure:           "failure",
	evError:             "error",
	evResultFailure:     "result:failure",
	evToolCallChunk:     "toolCallChunk",
	evLoopApprovalChunk: "loopApprovalChunk",
	evDoneEvent:         "done",
}

func (t evType) String() string { return evNames[t] }

// SafeValue marks event types as safe for logs.
func (evType) SafeValue() {}

func lookupEvType(name []byte) evType {
	switch string(name) {
	case "conversation":
		return evConversation
	case "textChunk":
		return evTextChunk
	case "thinkingChunk":
		return evThinkingChunk
	case "thinkingComplete":
		return evThinkingComplete
	case "ping":
		return evPing
	case "info":
		return evInfo
	case "planningChunk":
		return evPlanningChunk
	case "progressUpdate":
		return evProgressUpdate
	case "todoChunk":
		return evTodoChunk
	case "streamingFormat":
		return evStreamingFormat
	case "notification":
		return evNotification
	case "usageUpdate":
		return evUsageUpdate
	case "usage":
		return evUsage
	case "failure":
		return evFailure
	case "error":
		return evError
	case "toolCallChunk":
		return evToolCallChunk
	case "loopApprovalChunk":
		return evLoopApprovalChunk
	case "done":
		return evDoneEvent
	}
	return evUnknown
}
