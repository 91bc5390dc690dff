package structured_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/structured"
)

// FuzzCheck: whatever the upstream answers, Check either returns exactly the
// answer without its surrounding white space, which is then one valid JSON
// value, or refuses it with upstream_output_invalid; it never panics.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"city":"Oslo","temp":1}`, ` [1,2] `, "```json\n{}\n```", "Sure! {\"a\":1}", `{"a":1`, `"x"`, `{"city":"O","temp":1e999999999}`} {
		f.Add(s)
	}
	schema := `{"type":"object","properties":{"city":{"type":"string","pattern":"^[A-Z][a-z]+$","maxLength":20},"temp":{"type":"number","multipleOf":0.5},` +
		`"when":{"type":"string","format":"date-time"},"tags":{"type":"array","items":{"enum":["a","b"]},"uniqueItems":true}},"required":["city","temp"]}`
	fs, err := structured.Prepare(structured.Spec{Kind: chat.OutputJSONSchema, Name: "x", Schema: []byte(schema), SchemaPath: "s"})
	if err != nil {
		f.Fatal(err)
	}
	formats := []chat.OutputFormat{fs, {Kind: chat.OutputJSONObject}}
	f.Fuzz(func(t *testing.T, answer string) {
		for _, format := range formats {
			got, err := structured.Check(format, answer)
			if err != nil {
				if !errs.Has(err, errs.UpstreamOutputInvalid) {
					t.Fatalf("Check(%q): %v", answer, err)
				}
				continue
			}
			if got != strings.Trim(answer, " \t\r\n") || !json.Valid([]byte(got)) {
				t.Fatalf("Check(%q) accepted %q", answer, got)
			}
		}
	})
}
