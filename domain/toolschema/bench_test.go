package toolschema_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pmgate/pmgate/domain/toolschema"
)

func benchLower(b *testing.B, schema string) {
	raw := []byte(schema)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := toolschema.Lower(raw, "p", toolschema.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLowerClaudeCodeLike(b *testing.B) { benchLower(b, claudeCodeLike) }
func BenchmarkLowerZodLike(b *testing.B)        { benchLower(b, zodLike) }

// BenchmarkLowerNothingToDo is the common case: a schema already in the
// vocabulary is checked and returned as sent.
func BenchmarkLowerNothingToDo(b *testing.B) {
	benchLower(b, `{"type":"object","properties":{"city":{"type":"string","description":"City name"},"days":{"type":"integer","minimum":1,"maximum":14}},"required":["city"]}`)
}

// BenchmarkLowerRefusedDAG: a reference DAG with 2^29 leaves is refused in
// time linear in its definitions.
func BenchmarkLowerRefusedDAG(b *testing.B) {
	raw := []byte(dag(30))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := toolschema.Lower(raw, "p", toolschema.Options{}); err == nil {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkValidateClaudeCodeLike(b *testing.B) {
	lowered, err := toolschema.Lower([]byte(claudeCodeLike), "p", toolschema.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := toolschema.Compile(lowered)
	if err != nil {
		b.Fatal(err)
	}
	args := `{"url":"https://example.com/docs","prompt":"Summarize the page","resumeFromRunId":"run_123"}`
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(args); err != nil {
			b.Fatal(err)
		}
	}
}

// manyProperties is one object schema with n properties, each with a pattern
// to lower: lookups must stay linear in the schema's size.
func manyProperties(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%05d":{"type":"string","pattern":"^a"}`, i)
	}
	b.WriteString(`},"required":["p00000"]}`)
	return b.String()
}

func BenchmarkLowerTwentyThousandProperties(b *testing.B) { benchLower(b, manyProperties(20000)) }

func BenchmarkValidateTwentyThousandArguments(b *testing.B) {
	lowered, err := toolschema.Lower([]byte(manyProperties(20000)), "p", toolschema.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := toolschema.Compile(lowered)
	if err != nil {
		b.Fatal(err)
	}
	var args strings.Builder
	args.WriteString("{")
	for i := 0; i < 20000; i++ {
		if i > 0 {
			args.WriteString(",")
		}
		fmt.Fprintf(&args, `"p%05d":"a"`, i)
	}
	args.WriteString("}")
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(args.String()); err != nil {
			b.Fatal(err)
		}
	}
}
