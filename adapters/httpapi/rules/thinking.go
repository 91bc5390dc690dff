package rules

// This file reads the three APIs' effort and thinking fields into the one
// thinking level the service has (chat.ThinkingLevel: low, medium or high;
// docs/UPSTREAM.md). The field policies type-check them first; a word the
// service has no level for is refused with its path, never guessed.

import (
	"github.com/pmgate/pmgate/adapters/httpapi/wire/messages"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/responses"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/chat"
)

// effortWords is the detail of a refused effort word.
const effortWords = "the service thinks at low, medium or high only; use none, minimal, low, medium, high, xhigh or max."

// Effort reads one effort word (a string the field policy type-checked)
// at param; absent or null asks for nothing.
func Effort(e wirejson.String, param string) (chat.ThinkingLevel, bool, error) {
	if wirejson.Absent(e.Kind) {
		return chat.ThinkingOff, false, nil
	}
	if !e.IsString() {
		return chat.ThinkingOff, false, Invalid(param, "must be a string.")
	}
	level, err := EffortLevel(e.V, param)
	return level, err == nil, err
}

// EffortLevel reads one effort word at param.
func EffortLevel(word, param string) (chat.ThinkingLevel, error) {
	level, ok := chat.EffortLevel(word)
	if !ok {
		return chat.ThinkingOff, Unsupported(param, effortWords)
	}
	return level, nil
}

// ResponsesReasoning is the Responses API's reasoning.effort (the
// object's other members, summary among them, produce nothing).
func ResponsesReasoning(r wirejson.Echoed[responses.Reasoning]) (chat.ThinkingLevel, error) {
	if r.Kind() != '{' {
		return chat.ThinkingOff, nil // the field policy refused any other kind but null
	}
	level, _, err := Effort(r.V.Effort, "reasoning.effort")
	return level, err
}

// MessagesThinking is the Messages API's thinking and output_config.effort
// (their kinds checked by the field policy): thinking {type: "disabled"}
// turns thinking off; otherwise an effort wins, then an enabled thinking's
// budget_tokens (chat.BudgetLevel); adaptive thinking without an effort asks
// for nothing.
func MessagesThinking(th wirejson.Object[messages.Thinking], oc wirejson.Object[messages.OutputConfig]) (chat.ThinkingLevel, error) {
	level, hasEffort := chat.ThinkingOff, false
	if oc.IsObject() && oc.V.Effort.IsString() {
		var err error
		if level, err = EffortLevel(oc.V.Effort.V, "output_config.effort"); err != nil {
			return chat.ThinkingOff, err
		}
		hasEffort = true
	}
	if !th.IsObject() {
		return level, nil
	}
	if !th.V.Type.IsString() {
		return chat.ThinkingOff, Invalid("thinking.type", "must be a string.")
	}
	switch th.V.Type.V {
	case "disabled":
		return chat.ThinkingOff, nil
	case "adaptive":
		return level, nil
	case "enabled":
		if hasEffort {
			return level, nil
		}
		n, ok := th.V.BudgetTokens.Int()
		if !ok || n < 1 {
			return chat.ThinkingOff, Invalid("thinking.budget_tokens", "must be a positive integer when thinking is enabled.")
		}
		return chat.BudgetLevel(n), nil
	}
	return chat.ThinkingOff, Unsupported("thinking.type", "must be \"enabled\", \"adaptive\" or \"disabled\".")
}
