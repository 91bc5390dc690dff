package httpapi

// This file reads the three APIs' effort and thinking fields into the one
// thinking level the service has (chat.ThinkingLevel: low, medium or high;
// docs/UPSTREAM.md). The field policies type-check them first; a word the
// service has no level for is refused with its path, never guessed.

import (
	"encoding/json"

	"github.com/pmgate/pmgate/domain/chat"
)

// effortWords is the detail of a refused effort word.
const effortWords = "the service thinks at low, medium or high only; use none, minimal, low, medium, high, xhigh or max."

// decodeEffort reads one effort word (a string the field policy type-checked)
// at param; absent or null asks for nothing.
func decodeEffort(raw json.RawMessage, param string) (chat.ThinkingLevel, bool, error) {
	if absent(raw) {
		return chat.ThinkingOff, false, nil
	}
	if kindOf(raw) != kindString {
		return chat.ThinkingOff, false, invalid(param, "must be a string.")
	}
	level, ok := chat.EffortLevel(str(raw))
	if !ok {
		return chat.ThinkingOff, false, unsupported(param, effortWords)
	}
	return level, true, nil
}

// decodeReasoningEffort is chat's reasoning_effort.
func decodeReasoningEffort(top map[string]json.RawMessage) (chat.ThinkingLevel, error) {
	level, _, err := decodeEffort(top["reasoning_effort"], "reasoning_effort")
	return level, err
}

// decodeResponsesReasoning is the Responses API's reasoning.effort (the
// object's other members, summary among them, produce nothing).
func decodeResponsesReasoning(raw json.RawMessage) (chat.ThinkingLevel, error) {
	if absent(raw) || kindOf(raw) != kindObject {
		return chat.ThinkingOff, nil // the field policy refused any other kind
	}
	level, _, err := decodeEffort(fields(raw)["effort"], "reasoning.effort")
	return level, err
}

// decodeMessagesThinking is the Messages API's thinking and
// output_config.effort: thinking {type: "disabled"} turns thinking off;
// otherwise an effort wins, then an enabled thinking's budget_tokens
// (chat.BudgetLevel); adaptive thinking without an effort asks for nothing.
func decodeMessagesThinking(top map[string]json.RawMessage) (chat.ThinkingLevel, error) {
	var effort json.RawMessage
	if oc := top["output_config"]; kindOf(oc) == kindObject {
		effort = fields(oc)["effort"]
	}
	level, hasEffort, err := decodeEffort(effort, "output_config.effort")
	if err != nil {
		return chat.ThinkingOff, err
	}
	th := top["thinking"]
	if absent(th) || kindOf(th) != kindObject {
		return level, nil
	}
	f := fields(th)
	typ := f["type"]
	if kindOf(typ) != kindString {
		return chat.ThinkingOff, invalid("thinking.type", "must be a string.")
	}
	switch str(typ) {
	case "disabled":
		return chat.ThinkingOff, nil
	case "adaptive":
		return level, nil
	case "enabled":
		if hasEffort {
			return level, nil
		}
		n, ok := integer(f["budget_tokens"])
		if !ok || n < 1 {
			return chat.ThinkingOff, invalid("thinking.budget_tokens", "must be a positive integer when thinking is enabled.")
		}
		return chat.BudgetLevel(n), nil
	}
	return chat.ThinkingOff, unsupported("thinking.type", "must be \"enabled\", \"adaptive\" or \"disabled\".")
}
