package chat_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/chat"
)

// The service's thinkingLevel is enum(["low","medium","high"]) (the 12.29.2
// client's contract, read by ps2Api types.go normalizeThinkingLevel): every
// effort word of the three APIs lands on one of them, on off, or is refused.
func TestEveryEffortWordLandsOnALevelTheServiceHasOrIsRefused(t *testing.T) {
	is := is.New(t)
	for word, want := range map[string]chat.ThinkingLevel{
		"none": chat.ThinkingOff, "minimal": chat.ThinkingLow, "low": chat.ThinkingLow, "medium": chat.ThinkingMedium,
		"high": chat.ThinkingHigh, "xhigh": chat.ThinkingHigh, "max": chat.ThinkingHigh,
	} {
		got, ok := chat.EffortLevel(word)
		is.True(ok)         // a word of the APIs
		is.Equal(got, want) // on the service's scale
	}
	for _, word := range []string{"", "HIGH", "ultra", "auto", "off", "medium "} {
		_, ok := chat.EffortLevel(word)
		is.True(!ok) // no level: refused, never guessed
	}
}

func TestAThinkingBudgetLandsOnALevel(t *testing.T) {
	is := is.New(t)
	for tokens, want := range map[int64]chat.ThinkingLevel{
		1: chat.ThinkingLow, 1024: chat.ThinkingLow, 4000: chat.ThinkingLow, 4096: chat.ThinkingLow,
		4097: chat.ThinkingMedium, 10000: chat.ThinkingMedium, 16384: chat.ThinkingMedium,
		16385: chat.ThinkingHigh, 31999: chat.ThinkingHigh, 1 << 40: chat.ThinkingHigh,
	} {
		is.Equal(chat.BudgetLevel(tokens), want) // Claude Code's think / think hard / ultrathink
	}
}
