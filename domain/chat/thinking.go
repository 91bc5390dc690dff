package chat

// ThinkingLevel is how much the service should think before it answers: its
// devModeOptions.thinkingLevel, whose contract has exactly three values,
// low, medium and high (docs/UPSTREAM.md). The zero value asks for nothing:
// the service's thinking mode stays off, as it is when a client says
// nothing.
type ThinkingLevel string

// SafeValue marks thinking levels as safe for logs.
func (ThinkingLevel) SafeValue() {}

// The service's levels.
const (
	ThinkingOff    ThinkingLevel = ""
	ThinkingLow    ThinkingLevel = "low"
	ThinkingMedium ThinkingLevel = "medium"
	ThinkingHigh   ThinkingLevel = "high"
)

// EffortLevel maps an effort word of the three APIs (chat's
// reasoning_effort, the Responses API's reasoning.effort, the Messages API's
// output_config.effort) onto the service's levels. "none" turns thinking off;
// "minimal" is the service's floor, low; "xhigh" and "max" its ceiling, high.
// ok is false for any other word: the service has no level for it, so the
// request is refused rather than guessed.
func EffortLevel(effort string) (level ThinkingLevel, ok bool) {
	switch effort {
	case "none":
		return ThinkingOff, true
	case "minimal", "low":
		return ThinkingLow, true
	case "medium":
		return ThinkingMedium, true
	case "high", "xhigh", "max":
		return ThinkingHigh, true
	}
	return ThinkingOff, false
}

// Thinking budgets (the Messages API's thinking.budget_tokens) at which a
// level starts: Claude Code's "think" asks about 4,000 tokens, "think hard"
// about 10,000, "ultrathink" about 32,000.
const (
	mediumBudget = 4096
	highBudget   = 16384
)

// BudgetLevel maps a thinking budget in tokens onto the service's levels:
// up to 4,096 low, up to 16,384 medium, above that high.
func BudgetLevel(tokens int64) ThinkingLevel {
	switch {
	case tokens > highBudget:
		return ThinkingHigh
	case tokens > mediumBudget:
		return ThinkingMedium
	}
	return ThinkingLow
}
