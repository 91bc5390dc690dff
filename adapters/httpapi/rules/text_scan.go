package rules

import (
	"unicode/utf8"

	"github.com/pmgate/pmgate/domain/jsonlex"
)

// validText reports, without allocating, whether checkText accepts body (valid
// JSON): every byte is UTF-8 (outside strings a valid JSON body is ASCII) and
// every \u escape of a surrogate is a high one followed by a low one. Almost
// every body passes, so checkText walks the body for a path only when this
// fails; the walk names each key and index, which costs allocations.
func validText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' { // in a valid JSON body, a backslash starts an escape
			continue
		}
		i++ // the escaped character; the loop steps over it
		if b[i] != 'u' {
			continue
		}
		r, ok := jsonlex.Hex4(b, i+1)
		if !ok {
			return false
		}
		i += 4
		switch {
		case jsonlex.IsHigh(r): // a low surrogate must follow
			if i+7 <= len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
				if lo, ok := jsonlex.Hex4(b, i+3); ok && jsonlex.IsLow(lo) {
					i += 6
					continue
				}
			}
			return false
		case jsonlex.IsLow(r): // a low surrogate without a high one
			return false
		}
	}
	return true
}
