package rules

import (
	"encoding/json"

	"github.com/cockroachdb/errors"

	wchat "github.com/pmgate/pmgate/adapters/httpapi/wire/chat"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/messages"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/responses"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/structured"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// This file reads the structured output of a request (chat response_format,
// Responses text.format) into the one request option, chat.OutputFormat;
// domain/structured prepares it (docs/STRUCTURED-OUTPUT.md). The field rules
// (checkResponseFormat, checkResponsesText) have already checked the type.

// ResponseFormat reads chat's response_format:
// {"type":"json_schema","json_schema":{"name","description","schema","strict"}}
// or {"type":"json_object"} or {"type":"text"}.
func ResponseFormat(rf wirejson.Object[wchat.ResponseFormat]) (chat.OutputFormat, error) {
	if !rf.IsObject() {
		return chat.OutputFormat{}, nil
	}
	spec := structured.Spec{Kind: outputKindOf(rf.V.Type.V)}
	if spec.Kind == chat.OutputJSONSchema {
		const p = "response_format.json_schema"
		js := rf.V.JSONSchema
		if !js.IsObject() {
			return chat.OutputFormat{}, Invalid(p, "is required and must be an object.")
		}
		if err := readSchemaSpec(js.V, p, &spec); err != nil {
			return chat.OutputFormat{}, err
		}
	}
	return PrepareOutput(spec)
}

// TextFormat reads Responses' text.format:
// {"type":"json_schema","name","description","schema","strict"} or
// {"type":"json_object"} or {"type":"text"}.
func TextFormat(text wirejson.Echoed[responses.Text]) (chat.OutputFormat, error) {
	if text.Kind() != '{' || !text.V.Format.IsObject() {
		return chat.OutputFormat{}, nil
	}
	f := text.V.Format.V
	spec := structured.Spec{Kind: outputKindOf(f.Type.V)}
	if spec.Kind == chat.OutputJSONSchema {
		js := wchat.JSONSchema{Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}
		if err := readSchemaSpec(js, "text.format", &spec); err != nil {
			return chat.OutputFormat{}, err
		}
	}
	return PrepareOutput(spec)
}

// outputKindOf is the output kind a format type names (text for any other).
func outputKindOf(t string) chat.OutputKind {
	switch t {
	case "json_object":
		return chat.OutputJSONObject
	case "json_schema":
		return chat.OutputJSONSchema
	}
	return chat.OutputText
}

// readSchemaSpec reads name (required, as OpenAI requires it), description
// (a string, not sent: the instruction is fixed text), schema (an object) and
// strict (a boolean) of a json_schema format at p.
func readSchemaSpec(js wchat.JSONSchema, p string, spec *structured.Spec) error {
	spec.NamePath, spec.SchemaPath = p+".name", p+".schema"
	if !js.Name.IsString() {
		return Invalid(spec.NamePath, "is required and must be a string.")
	}
	spec.Name = js.Name.V
	if d := js.Description; !wirejson.Absent(d.Kind) && !d.IsString() {
		return Invalid(p+".description", "must be a string.")
	}
	switch js.Schema.Kind() {
	case 0, 'n':
	case '{':
		spec.Schema = json.RawMessage(js.Schema)
	default:
		return Invalid(spec.SchemaPath, "must be a JSON schema object.")
	}
	var err error
	spec.Strict, err = OptionalBool(js.Strict, p+".strict", false)
	return err
}

// PrepareOutput renders a refusal of domain/structured in the API's shape.
func PrepareOutput(spec structured.Spec) (chat.OutputFormat, error) {
	out, err := structured.Prepare(spec)
	var pr *toolschema.Problem
	if errors.As(err, &pr) {
		return chat.OutputFormat{}, Refuse(pr.Code, pr.Path, pr.Detail)
	}
	return out, err
}

// OutputConfigFormat reads the Anthropic Messages API's
// output_config.format: {"type":"json_schema","schema":{…}} (no name, no
// strict), stored as chat.Request.Output the way the chat and Responses
// decoders do. The field policy has checked the type.
func OutputConfigFormat(oc wirejson.Object[messages.OutputConfig]) (chat.OutputFormat, error) {
	if !oc.IsObject() || !oc.V.Format.IsObject() {
		return chat.OutputFormat{}, nil
	}
	f := oc.V.Format.V
	const p = "output_config.format"
	spec := structured.Spec{Kind: outputKindOf(f.Type.V), NamePath: p + ".name", SchemaPath: p + ".schema"}
	if spec.Kind == chat.OutputJSONSchema {
		if f.Schema.Kind() != '{' {
			return chat.OutputFormat{}, Invalid(spec.SchemaPath, "is required and must be a JSON schema object.")
		}
		spec.Schema = json.RawMessage(f.Schema)
	}
	return PrepareOutput(spec)
}
