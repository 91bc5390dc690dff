package secret

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Redacted replaces every removed secret.
const Redacted = "[REDACTED]"

// Redactor removes secrets from text before it is logged or returned to a
// caller. It is safe for concurrent use; a nil *Redactor applies only the
// patterns.
type Redactor struct {
	exact *strings.Replacer // nil without secrets
	olds  []string          // the spellings exact replaces
}

// NewRedactor returns a Redactor for the given secrets; empty ones are ignored.
// Besides the exact value it removes the URL-escaped, JSON-escaped and
// Go-quoted spellings of each secret.
func NewRedactor(secrets ...string) *Redactor {
	var olds []string
	for _, s := range secrets {
		if s == "" {
			continue
		}
		j, _ := json.Marshal(s)
		q := strconv.Quote(s)
		for _, v := range []string{s, url.QueryEscape(s), url.PathEscape(s), string(j[1 : len(j)-1]), q[1 : len(q)-1]} {
			if !slices.Contains(olds, v) {
				olds = append(olds, v)
			}
		}
	}
	r := &Redactor{}
	if len(olds) == 0 {
		return r
	}
	// At one position the first listed match wins: list longer values first.
	slices.SortFunc(olds, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	pairs := make([]string, 0, 2*len(olds))
	for _, o := range olds {
		pairs = append(pairs, o, Redacted)
	}
	r.exact, r.olds = strings.NewReplacer(pairs...), olds
	return r
}

// value is a credential value: everything up to the next whitespace, semicolon,
// comma, double or single quote, or the end.
const value = `[^\s;,"']+`

// sep is a header or parameter separator, tolerant of quoted JSON keys and values.
const sep = `["']?[ \t]*[:=][ \t]*["']?`

// patterns run in order after the exact secrets; group 1 is kept.
var patterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(\bbearer[ \t]+)` + value),
	regexp.MustCompile(`(?i)(postman\.sid["']?[ \t]*=[ \t]*["']?)` + value),
	regexp.MustCompile(`(?i)(\b(?:x-access-token|cookie)` + sep + `)` + value),
	regexp.MustCompile(`(?i)(\bauthorization` + sep + `)(?:[a-z][a-z0-9_-]*[ \t]+)?` + value),
	regexp.MustCompile(`(?i)(\b[a-z][a-z0-9+.-]*://)[^/\s@?#"'<>]+@`),
}

// String returns s with every configured secret and every recognizable
// credential replaced by [REDACTED]: postman.sid=<v>, Bearer <v>,
// X-Access-Token: <v>, Cookie: <v>, Authorization: [scheme] <v> (names in any
// case, ':' or '=' separated, JSON-quoted or not), and URL userinfo.
//
// Most logged values hold no secret and no credential pattern: each step
// first checks a condition every match needs (a secret's spelling, a
// pattern's literal), without allocating, and is skipped when it fails.
func (r *Redactor) String(s string) string {
	if r != nil && r.exact != nil && containsAny(s, r.olds) {
		s = r.exact.Replace(s)
	}
	for i, re := range patterns {
		if !mayMatch(s, literals[i]) {
			continue
		}
		repl := "${1}" + Redacted
		if i == len(patterns)-1 {
			repl += "@"
		}
		s = re.ReplaceAllString(s, repl)
	}
	return s
}

// literals are, by pattern, lower-case ASCII strings one of which every match
// of the pattern contains (under ASCII case folding).
var literals = [][]string{{"bearer"}, {"postman.sid"}, {"x-access-token", "cookie"}, {"authorization"}, {"://"}}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// mayMatch reports whether s contains one of lits ignoring ASCII case, or
// any non-ASCII byte: (?i) folds some non-ASCII letters to ASCII ones (U+017F
// to s, U+212A to k), so such text always takes the regular expression.
func mayMatch(s string, lits []string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return true
		}
	}
	for _, lit := range lits {
		if containsFoldASCII(s, lit) {
			return true
		}
	}
	return false
}

// containsFoldASCII reports whether ASCII s contains lit (lower case) in any
// ASCII case.
func containsFoldASCII(s, lit string) bool {
	for i := 0; i+len(lit) <= len(s); i++ {
		j := 0
		for ; j < len(lit); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lit[j] {
				break
			}
		}
		if j == len(lit) {
			return true
		}
	}
	return false
}
