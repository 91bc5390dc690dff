package toolschema_test

import (
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/toolschema"
)

// FuzzLower: lowering never panics; a refusal is always a Problem with a
// path; what it returns is in the bounded vocabulary (strict accepts it
// unchanged), lowering it again changes nothing, and it compiles.
func FuzzLower(f *testing.F) {
	for _, s := range []string{claudeCodeLike, zodLike, dag(5), `{"type":"object"}`, `{"$ref":"#/$defs/a","$defs":{"a":{"type":"object","x-k":[1]}}}`,
		`{"type":"object","properties":{"a":{"anyOf":[{"$ref":"#/definitions/b"},{"type":"null"}]}},"definitions":{"b":{"type":"string","format":"email"}}}`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, widen bool) {
		opts := toolschema.Options{WidenCombinators: widen}
		out, err := toolschema.Lower(raw, "p", opts)
		if err != nil {
			var pr *toolschema.Problem
			if !errors.As(err, &pr) || pr.Path == "" || pr.Detail == "" {
				t.Fatalf("refusal without a path: %v", err)
			}
			return
		}
		strict, err := toolschema.Lower(out, "p", toolschema.Options{Policy: toolschema.PolicyStrict})
		if err != nil || string(strict) != string(out) {
			t.Fatalf("lowered schema outside the vocabulary: %v\n%s", err, out)
		}
		again, err := toolschema.Lower(out, "p", opts)
		if err != nil || string(again) != string(out) {
			t.Fatalf("lowering is not idempotent: %v\n%s\n%s", err, out, again)
		}
		if _, err := toolschema.Compile(out); err != nil {
			t.Fatalf("lowered schema does not compile: %v", err)
		}
	})
}

// FuzzValidate: validation never panics on any arguments.
func FuzzValidate(f *testing.F) {
	f.Add(`{"url":"x","prompt":"y"}`)
	f.Add(`{"url":1e99999999999}`)
	f.Add(`{"resumeFromRunId":[{"a":[]}]}`)
	lowered, err := toolschema.Lower([]byte(claudeCodeLike), "p", toolschema.Options{})
	if err != nil {
		f.Fatal(err)
	}
	s, err := toolschema.Compile(lowered)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args string) { _ = s.Validate(args) })
}
