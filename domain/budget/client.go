package budget

import "strings"

// Client is a client program the gateway can tell from its User-Agent and that
// has a recipe in docs/CLIENTS.md.
type Client string

// The clients with a recipe.
const (
	ClientUnknown    Client = ""
	ClientCodex      Client = "codex"
	ClientOpencode   Client = "opencode"
	ClientClaudeCode Client = "claude-code"
	ClientAISDK      Client = "ai-sdk"
	ClientGeminiCLI  Client = "gemini-cli"
)

// clients maps a User-Agent fragment to its client, checked in this order (an
// agent built on the AI SDK names itself before the SDK does), and each
// client to its docs/CLIENTS.md section.
var clients = []struct {
	fragment string
	client   Client
	name     string
	anchor   string
}{
	{"codex", ClientCodex, "Codex CLI", "codex-cli"},
	{"opencode", ClientOpencode, "opencode", "opencode"},
	{"claude-cli", ClientClaudeCode, "Claude Code", "claude-code"},
	{"claude-code", ClientClaudeCode, "Claude Code", "claude-code"},
	{"ai-sdk/", ClientAISDK, "the AI SDK", "vercel-ai-sdk"},
	{"geminicli", ClientGeminiCLI, "Gemini CLI", "gemini-cli"}, // GeminiCLI-tui/0.61.0/<model> (…)
}

// ClientOf tells the client from a User-Agent header (case-insensitive);
// ClientUnknown when it names none of them.
func ClientOf(userAgent string) Client {
	ua := strings.ToLower(userAgent)
	for _, c := range clients {
		if strings.Contains(ua, c.fragment) {
			return c.client
		}
	}
	return ClientUnknown
}

// Anchor is the client's section of docs/CLIENTS.md ("docs/CLIENTS.md" for an
// unknown client).
func (c Client) Anchor() string {
	for _, e := range clients {
		if e.client == c {
			return "docs/CLIENTS.md#" + e.anchor
		}
	}
	return "docs/CLIENTS.md"
}

// advice says where the recipe that fits the budgets is.
func (c Client) advice() string {
	for _, e := range clients {
		if e.client == c {
			return "A recipe for " + e.name + " that fits: " + c.Anchor() + "."
		}
	}
	return "Recipes that fit, per client: docs/CLIENTS.md."
}
