package rules

import (
	"strconv"
	"strings"

	wchat "github.com/pmgate/pmgate/adapters/httpapi/wire/chat"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
)

// JoinTextOf joins the text of an array of text parts with no separator.
// text says which part types carry text; a type in known is one the API
// defines but the gateway cannot honour (unsupported), any other is invalid.
// noun names the parts in refusals ("content", "output").
func JoinTextOf(p string, parts []wirejson.Object[wchat.Part], noun string, text func(string) bool, known map[string]bool) (string, error) {
	var b strings.Builder
	for j := range parts {
		pp := p + "[" + strconv.Itoa(j) + "]"
		if !parts[j].IsObject() {
			return "", Invalid(pp, "must be an object.")
		}
		f := &parts[j].V
		if !f.Type.IsString() {
			return "", Invalid(pp+".type", "is required and must be a string.")
		}
		switch t := f.Type.V; {
		case text(t):
		case known[t]:
			return "", Unsupported(pp+".type", "only text "+noun+" parts are supported.")
		default:
			return "", Invalid(pp+".type", "is not a known "+noun+" part type.")
		}
		if !f.Text.IsString() {
			return "", Invalid(pp+".text", "is required and must be a string.")
		}
		b.WriteString(f.Text.V)
	}
	return b.String(), nil
}
