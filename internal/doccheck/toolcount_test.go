package doccheck_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestReadmeClientsAndMessagesAgreeOnClaudeCodesTools: the README's table,
// docs/CLIENTS.md and docs/MESSAGES.md give Claude Code the same tool counts:
// its default set, and the recipe's (the names of its --tools list).
func TestReadmeClientsAndMessagesAgreeOnClaudeCodesTools(t *testing.T) {
	is := is.New(t)
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		is.NoErr(err)
		return string(b)
	}
	readme, clients, messages := read("README.md"), read("docs/CLIENTS.md"), read("docs/MESSAGES.md")

	recipe := regexp.MustCompile("--tools (Bash,[A-Za-z,]+)`: \\*\\*([0-9,]+) characters, ([0-9]+) tools\\*\\*").FindStringSubmatch(clients)
	is.True(recipe != nil)                                        // CLIENTS.md's direct recipe and its measure
	is.Equal(strings.Count(recipe[1], ",")+1, atoi(t, recipe[3])) // the tools it names are the tools it counts
	row := regexp.MustCompile("(?m)^\\| Claude Code \\(directly[^\n]*\\| ([0-9,]+) \\(([0-9]+) tools\\) \\|$").FindStringSubmatch(readme)
	is.True(row != nil)
	is.Equal(row[1], recipe[2]) // the README's recipe size is CLIENTS.md's
	is.Equal(row[2], recipe[3]) // and so is its tool count

	def := regexp.MustCompile("(?m)^\\| Claude Code \\(directly, `/v1/messages`\\) \\| [0-9,]+ \\(([0-9]+) tools\\)").FindStringSubmatch(readme)
	is.True(def != nil)
	is.True(strings.Contains(clients, "with its default tools 17,262 characters ("+def[1]+" tools)"))       // the default set, as CLIENTS.md has it
	is.True(strings.Contains(messages, "default tool set\n  behind a custom base URL is "+def[1]+" tools")) // and MESSAGES.md
}

func atoi(t *testing.T, s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// TestInstallMentionsNoDownloadThatDoesNotExist: the project publishes no
// binaries, so INSTALL.md never sends a reader to fetch one.
func TestInstallMentionsNoDownloadThatDoesNotExist(t *testing.T) {
	is := is.New(t)
	b, err := os.ReadFile(filepath.Join(root, "docs/INSTALL.md"))
	is.NoErr(err)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(strings.ToLower(line), "download") {
			is.True(strings.Contains(line, "no published download")) // only to say there is none
		}
	}
}
