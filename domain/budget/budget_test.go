package budget_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/domain/budget"
)

var (
	query = budget.Limit{Value: 10000, Source: budget.SourceDefault, Setting: "POSTMAN_MAX_QUERY_CHARS"}
	tools = budget.Limit{Value: 20, Source: budget.SourceDefault, Setting: "POSTMAN_MAX_TOOLS_UPSTREAM"}
)

func TestARequestWithinBothBudgetsHasNoRefusal(t *testing.T) {
	is := is.New(t)
	r := budget.Request{QueryChars: 10000, Query: query, Tools: 20, ToolsLimit: tools}
	is.True(!r.OverQuery() && !r.OverTools()) // the limits are inclusive
	is.Equal(r.Detail(), "")
}

func TestARefusalNamesTheSizeTheLimitItsOriginAndTheRecipe(t *testing.T) {
	is := is.New(t)
	r := budget.Request{QueryChars: 19946, Query: query, Tools: 12, ToolsLimit: tools, Client: budget.ClientOf("codex_exec/0.171.0 (Linux; x86_64)"),
		Largest: budget.Part{Index: 0, Role: "developer", Chars: 17012}, Instructions: 17012}
	d := r.Detail()
	is.True(strings.Contains(d, "19946 characters"))                               // the size
	is.True(strings.Contains(d, "10000 (the default of POSTMAN_MAX_QUERY_CHARS)")) // the limit and where it came from
	is.True(strings.Contains(d, "messages[0] (developer, 17012 characters)"))      // the largest message
	is.True(strings.Contains(d, "docs/CLIENTS.md#codex-cli"))                      // the client's recipe
	is.True(!strings.Contains(d, "tools"))                                         // the tools fit: not mentioned
	is.Equal(r.Param("messages"), "messages[0]")                                   // the message that alone is over
	r.Largest.Chars = 9000
	is.Equal(r.Param("input"), "input") // no single message is over: the whole query
}

// A request that follows its recipe (short instructions) and is long only by
// its history is told to compact it, not pointed at the recipe it follows;
// after the service lost the conversation the refusal says so first.
func TestALongHistoryIsToldToCompactAndALostConversationSaysWhatHappened(t *testing.T) {
	is := is.New(t)
	claude := budget.ClientOf("claude-cli/2.1.332 (external, sdk-cli)")
	r := budget.Request{QueryChars: 22402, Query: query, Tools: 7, ToolsLimit: tools, Client: claude, Instructions: 1800,
		Largest: budget.Part{Index: 31, Role: "user", Chars: 1600}}
	d := r.Detail()
	is.True(strings.Contains(d, "22402 characters"))                 // the size
	is.True(strings.Contains(d, "/compact"))                         // what to do
	is.True(!strings.Contains(d, "docs/CLIENTS.md"))                 // not the recipe it already follows
	is.True(!strings.Contains(d, "no longer has this conversation")) // nothing was lost
	r.Lost = true
	d = r.Detail()
	is.True(strings.HasPrefix(d, "The service no longer has this conversation")) // what happened, first
	is.True(strings.Contains(d, "/compact"))

	r.Instructions = 6000 // more than half the limit: the recipe is what helps
	is.True(strings.Contains(r.Detail(), "docs/CLIENTS.md#claude-code"))
	r.Instructions, r.Tools = 1800, 25 // too many tools: the recipe too
	is.True(strings.Contains(r.Detail(), "docs/CLIENTS.md#claude-code"))
	r.Tools, r.Largest.Chars = 7, 6000 // one message takes most of it: not the history
	is.True(!strings.Contains(r.Detail(), "/compact"))
}

func TestARequestOverBothBudgetsSaysBothAtOnce(t *testing.T) {
	is := is.New(t)
	r := budget.Request{QueryChars: 16699, Query: budget.Limit{Value: 7000, Source: budget.SourceMeasured, Setting: "POSTMAN_MAX_QUERY_CHARS"},
		Tools: 25, ToolsLimit: budget.Limit{Value: 20, Source: budget.SourceSetting, Setting: "POSTMAN_MAX_TOOLS_UPSTREAM"}}
	d := r.Detail()
	is.True(strings.Contains(d, "25 tools") && strings.Contains(d, "20 (set by POSTMAN_MAX_TOOLS_UPSTREAM)"))              // the tools
	is.True(strings.Contains(d, "16699 characters") && strings.Contains(d, "7000 (measured by the verified probe report")) // and the query
	is.True(strings.Contains(d, "docs/CLIENTS.md"))                                                                        // an unknown client: the page
	is.Equal(r.Param("messages"), "messages")                                                                              // both: the request as a whole
}

func TestAContinuedConversationSaysOnlyItsNewMessagesAreOver(t *testing.T) {
	is := is.New(t)
	r := budget.Request{QueryChars: 12040, Query: query, ToolsLimit: tools, Continued: true,
		Largest: budget.Part{Index: 14, Role: "user", Chars: 12000}}
	d := r.Detail()
	is.True(strings.Contains(d, "new messages of this continued conversation alone would be 12040")) // not the history
	is.True(strings.Contains(d, "messages[14] (user, 12000 characters)"))                            // which message, how large
	is.Equal(r.Param("messages"), "messages[14]")
}

func TestClientsAreToldFromTheirUserAgent(t *testing.T) {
	is := is.New(t)
	for ua, want := range map[string]budget.Client{
		"codex_exec/0.171.0 (Ubuntu 24.4.0; x86_64) xterm":        budget.ClientCodex,
		"opencode/1.18.33 ai-sdk/openai-compatible/2.0.92":        budget.ClientOpencode, // the agent before its SDK
		"claude-cli/2.1.332 (external, sdk-cli)":                  budget.ClientClaudeCode,
		"ai-sdk/openai-compatible/2.0.92 runtime/node.js/20":      budget.ClientAISDK,
		"GeminiCLI-tui/0.61.0/pmgate-demo (linux; x64; terminal)": budget.ClientGeminiCLI,
		"OpenAI/JS 6.49.0": budget.ClientUnknown,
		"":                 budget.ClientUnknown,
	} {
		is.Equal(budget.ClientOf(ua), want) // ua
	}
	is.Equal(budget.ClientOpencode.Anchor(), "docs/CLIENTS.md#opencode")
	is.Equal(budget.ClientUnknown.Anchor(), "docs/CLIENTS.md")
}

// A User-Agent names its client in any case: the recipe a refusal points at
// is the client's own however it capitalises itself.
func TestClientsAreToldFromTheirUserAgentInAnyCase(t *testing.T) {
	is := is.New(t)
	for ua, want := range map[string]budget.Client{
		"Claude-Code/2.1.0 (external, cli)": budget.ClientClaudeCode,
		"CLAUDE-CLI/2.1.332":                budget.ClientClaudeCode,
		"OpenCode/1.18.33":                  budget.ClientOpencode,
		"Codex_Exec/0.171.0":                budget.ClientCodex,
		"AI-SDK/openai-compatible/2.0.92":   budget.ClientAISDK,
	} {
		is.Equal(budget.ClientOf(ua), want) // ua
	}
}
