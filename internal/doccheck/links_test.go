package doccheck_test

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// docs returns README.md and every Markdown file directly under docs/.
func docs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, files...)
}

// mdLink matches an inline Markdown link or image target: ](target) or
// ](target "title").
var mdLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)

// heading matches a Markdown heading line.
var heading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)

// anchors returns the GitHub-style anchors of the headings of a Markdown file:
// lowercase, spaces to '-', punctuation other than '-' and '_' dropped, and
// repeated headings numbered -1, -2, ….
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		m := heading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 0x7f:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// codeSpan matches an inline code span.
var codeSpan = regexp.MustCompile("`[^`]*`")

// stripCode removes fenced code blocks and inline code spans, whose brackets
// are not links.
func stripCode(text string) string {
	var b strings.Builder
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			b.WriteString(codeSpan.ReplaceAllString(line, ""))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestEveryRelativeLinkResolves checks every relative link of README.md and
// docs/*.md: the file or directory exists in the repository and a #fragment
// names a heading of the target Markdown file.
func TestEveryRelativeLinkResolves(t *testing.T) {
	for _, doc := range docs(t) {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(stripCode(string(raw)), -1) {
			target := m[1]
			u, err := url.Parse(target)
			if err != nil {
				t.Errorf("%s: link %q does not parse", doc, target)
				continue
			}
			if u.Scheme != "" || strings.HasPrefix(target, "//") {
				continue // absolute links are not checked (no network)
			}
			path := doc
			if u.Path != "" {
				path = filepath.Join(filepath.Dir(doc), filepath.FromSlash(u.Path))
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Errorf("%s: link %q: %s does not exist", doc, target, path)
				continue
			}
			if u.Fragment == "" || info.IsDir() || !strings.HasSuffix(path, ".md") {
				continue
			}
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(text))[u.Fragment] {
				t.Errorf("%s: link %q: %s has no heading #%s", doc, target, path, u.Fragment)
			}
		}
	}
}

// TestTheIndexListsEveryDoc: the README's Documentation section links every
// file under docs/ that is Markdown.
func TestTheIndexListsEveryDoc(t *testing.T) {
	is := is.New(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	is.NoErr(err)
	_, index, ok := strings.Cut(string(readme), "\n## Documentation\n")
	is.True(ok) // README.md has a Documentation section
	index, _, _ = strings.Cut(index, "\n## ")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	is.NoErr(err)
	for _, f := range files {
		if !strings.Contains(index, "(docs/"+filepath.Base(f)+")") {
			t.Errorf("README.md's Documentation section does not link docs/%s", filepath.Base(f))
		}
	}
}
