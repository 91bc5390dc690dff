// Package structured owns structured output: what a request's response
// format (chat response_format, Responses text.format, Messages
// output_config.format) becomes, the fixed instruction the upstream query
// ends with, and the check of the complete answer against the caller's
// schema. The API decoders read their field into a Spec and call Prepare;
// the upstream adapter appends Instruction to the query; the application's
// turn holds the answer until its end is proven and releases it only when
// Check accepts it. docs/STRUCTURED-OUTPUT.md states every rule.
//
// The package is pure: no I/O, no clock, no goroutines. The schema rules and
// the validator are domain/toolschema's (one validator for tool arguments and
// answers).
package structured

import (
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// Spec is a response format as an API decoder read it, before it is
// prepared. Paths are the parameter paths refusals name.
type Spec struct {
	Kind chat.OutputKind
	// Name is the schema's name ("" when the API has none or it was absent);
	// it is checked, kept, never sent upstream.
	Name string
	// Schema is the caller's schema object as sent (json_schema); nil means
	// any JSON value.
	Schema []byte
	// Strict asks for OpenAI's strict-mode rules (json_schema).
	Strict bool
	// NamePath and SchemaPath are the parameter paths of the name and the
	// schema, e.g. "response_format.json_schema.name" and
	// "response_format.json_schema.schema".
	NamePath, SchemaPath string
}

// Prepare checks a response format at request time and returns the request
// option. The schema is lowered for validation (toolschema.Options
// Validating): references inlined, format, pattern, propertyNames and
// record-style additionalProperties kept and later checked; whatever the
// validator could not check is refused with its path, so a request is
// accepted only when its answer can be verified. With Strict, OpenAI's
// strict-mode rules apply too. A refusal is a *toolschema.Problem
// (unsupported_parameter or invalid_request) naming the path.
func Prepare(s Spec) (chat.OutputFormat, error) {
	f := chat.OutputFormat{Kind: s.Kind, Name: s.Name, Strict: s.Strict}
	switch s.Kind {
	case chat.OutputText, chat.OutputJSONObject:
		return f, nil
	case chat.OutputJSONSchema:
	default:
		return chat.OutputFormat{}, &toolschema.Problem{Code: errs.InvalidRequest, Path: s.SchemaPath, Detail: "is not a known response format."}
	}
	if s.Name != "" && !toolschema.Identifier(s.Name) {
		return chat.OutputFormat{}, &toolschema.Problem{Code: errs.InvalidRequest, Path: s.NamePath,
			Detail: "must be 1 to 64 letters, digits, underscores or dashes."}
	}
	if len(s.Schema) == 0 {
		if s.Strict {
			return chat.OutputFormat{}, &toolschema.Problem{Code: errs.InvalidRequest, Path: s.SchemaPath, Detail: "is required when strict is true."}
		}
		return f, nil
	}
	checked, err := toolschema.Lower(s.Schema, s.SchemaPath, toolschema.Options{Policy: toolschema.PolicyLower, Output: true, Validating: true})
	if err != nil {
		return chat.OutputFormat{}, err
	}
	if _, err := toolschema.Compile(checked); err != nil {
		return chat.OutputFormat{}, &toolschema.Problem{Code: errs.UnsupportedParameter, Path: s.SchemaPath, Detail: "cannot be verified."}
	}
	if s.Strict {
		if err := toolschema.CheckStrict(checked, s.SchemaPath); err != nil {
			return chat.OutputFormat{}, err
		}
	}
	f.Schema, f.Checked = s.Schema, checked
	return f, nil
}

// The instruction appended to the upstream query of a structured request. It
// is fixed text; the only client text in it is the schema (its validating
// lowering, as compact JSON), never the name or anything else.
const (
	// InstructionHead starts every instruction.
	InstructionHead = "\n\n[Response format] Your final answer must be exactly one JSON "
	// InstructionObject completes the instruction of a json_object request.
	InstructionObject = InstructionHead + "object and nothing else: no prose, no Markdown, no code fences. " +
		"If you call tools, this applies only to the answer after them."
	// InstructionValue completes the instruction of a json_schema request
	// without a schema.
	InstructionValue = InstructionHead + "value and nothing else: no prose, no Markdown, no code fences. " +
		"If you call tools, this applies only to the answer after them."
	// InstructionSchema completes the instruction of a json_schema request;
	// the schema follows it.
	InstructionSchema = InstructionHead + "value valid against the JSON Schema below and nothing else: " +
		"no prose, no Markdown, no code fences. If you call tools, this applies only to the answer after them.\nJSON Schema: "
)

// Instruction is the text the upstream query of a request with format f ends
// with ("" for plain text).
func Instruction(f chat.OutputFormat) string {
	switch {
	case f.Kind == chat.OutputJSONObject:
		return InstructionObject
	case f.Kind == chat.OutputJSONSchema && len(f.Checked) == 0:
		return InstructionValue
	case f.Kind == chat.OutputJSONSchema:
		return InstructionSchema + string(f.Checked)
	}
	return ""
}

// FromQuery finds the instruction at the end of an upstream query: the kind
// and the schema it names (nil for none). It is Instruction's inverse, for
// the offline emulator, which stands for a model that follows it.
func FromQuery(query string) (kind chat.OutputKind, schema []byte, ok bool) {
	switch {
	case strings.HasSuffix(query, InstructionObject):
		return chat.OutputJSONObject, nil, true
	case strings.HasSuffix(query, InstructionValue):
		return chat.OutputJSONSchema, nil, true
	}
	if i := strings.LastIndex(query, InstructionSchema); i >= 0 {
		return chat.OutputJSONSchema, []byte(query[i+len(InstructionSchema):]), true
	}
	return chat.OutputText, nil, false
}

// Reasons an answer is refused (AnswerError.Reason).
const (
	ReasonRefusal     = "the model answered with text, not JSON (a refusal or an explanation)"
	ReasonCodeFence   = "the answer is wrapped in a Markdown code fence; it must be the JSON value alone"
	ReasonNotJSON     = "the answer is not exactly one JSON value (invalid JSON, or text after it)"
	ReasonProse       = "the answer has text before the JSON value; it must be the value alone"
	ReasonSchema      = "does not match the response schema"
	ReasonNotAnObject = "is not a JSON object"
	// ReasonLoneSurrogate: JSON allows a string escape of half a UTF-16
	// surrogate pair ("\ud800" alone), but clients decode it differently
	// (U+FFFD, a lone code unit, an error), so the value a client reads would
	// not be the value the schema accepted: such an answer fails closed.
	ReasonLoneSurrogate = "the answer has a string with a lone surrogate escape, which clients decode differently"
)

// AnswerError says why a complete answer was refused: a reason and, for a
// schema violation, the first failing path inside the answer ("answer",
// "answer.city", "answer.items[2]"; keys that are not plain identifiers are
// "?") and keyword. It never carries a value of the answer.
type AnswerError struct {
	Reason  string
	Path    string
	Keyword string
}

func (e *AnswerError) Error() string { return "structured: " + e.PublicDetail() }

// PublicDetail is the sentence a client may see.
func (e *AnswerError) PublicDetail() string {
	if e.Path == "" {
		return e.Reason + "."
	}
	return e.Path + ": " + e.Reason + " (" + e.Keyword + ")."
}

// anyObject validates a json_object answer, anyValue a json_schema answer
// without a schema.
var (
	anyObject = mustCompile(`{"type":"object"}`)
	anyValue  = mustCompile(`{}`)
)

func mustCompile(s string) *toolschema.Schema {
	sch, err := toolschema.Compile([]byte(s))
	if err != nil {
		panic(err)
	}
	return sch
}

// jsonSpace is the white space JSON allows around a value.
const jsonSpace = " \t\r\n"

// Check judges the complete answer of a structured request: it must be
// exactly one JSON value (white space around it aside, which is removed),
// without a lone surrogate escape in any string, valid against the caller's
// schema as prepared (json_schema) or an object (json_object). It returns the JSON text to show, or an error with code
// upstream_output_invalid wrapping an *AnswerError.
func Check(f chat.OutputFormat, answer string) (string, error) {
	text := strings.Trim(answer, jsonSpace)
	if !f.Structured() {
		return answer, nil
	}
	var sch *toolschema.Schema
	switch {
	case f.Kind == chat.OutputJSONObject:
		sch = anyObject
	case len(f.Checked) > 0:
		var err error
		if sch, err = toolschema.Compile(f.Checked); err != nil {
			return "", errs.Wrap(err, errs.InternalError)
		}
	default:
		sch = anyValue
	}
	err := sch.ValidateValue(text)
	var ae *toolschema.ArgumentsError
	switch {
	case err == nil:
		return text, nil
	case errors.Is(err, toolschema.ErrNotJSON):
		return "", refuse(&AnswerError{Reason: notJSONReason(text)})
	case errors.Is(err, toolschema.ErrLoneSurrogate):
		return "", refuse(&AnswerError{Reason: ReasonLoneSurrogate})
	case errors.As(err, &ae):
		reason := ReasonSchema
		if f.Kind == chat.OutputJSONObject {
			reason = ReasonNotAnObject
		}
		return "", refuse(&AnswerError{Reason: reason, Path: "answer" + ae.Path, Keyword: ae.Keyword})
	}
	return "", errs.Wrap(err, errs.InternalError)
}

func refuse(ae *AnswerError) error { return errs.Wrap(ae, errs.UpstreamOutputInvalid) }

// notJSONReason tells a refusal (text that cannot begin a JSON value and has
// no '{' or '[' in it), prose before a value (such text with one), and a code
// fence from JSON that is broken or has text after it. The reasons name a
// shape, never the text.
func notJSONReason(text string) string {
	switch {
	case strings.HasPrefix(text, "```"):
		return ReasonCodeFence
	case text == "":
		return ReasonRefusal
	case !strings.ContainsRune(`{["-0123456789tfn`, rune(text[0])):
		return proseOrRefusal(text)
	case text[0] == 't' || text[0] == 'f' || text[0] == 'n':
		// true, false, null: anything else starting with these letters is prose.
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(text, lit) {
				return ReasonNotJSON
			}
		}
		return proseOrRefusal(text)
	}
	return ReasonNotJSON
}

func proseOrRefusal(text string) string {
	if strings.ContainsAny(text, "{[") {
		return ReasonProse
	}
	return ReasonRefusal
}
