// Package toolschema owns what the gateway does with a tool's parameters
// schema: the bounded vocabulary the upstream accepts, the lowering of a
// caller's schema into it under TOOL_SCHEMA_POLICY, and the validation of the
// arguments the upstream produces against the lowered schema.
//
// [Lower] is used by the ingress (which keeps the caller's bytes for the tools
// hash and stores the result as chat.Tool.UpstreamParameters); the Postman
// adapter sends only that result; admission validates tool-call arguments
// with [Compile] and [Schema.Validate]. Under [PolicyStrict] every keyword
// outside the vocabulary is refused; under [PolicyLower] annotations move
// into the description, $refs into the schema's own definitions are inlined,
// schema-valued additionalProperties becomes true, and what cannot be lowered
// without changing which arguments are valid is refused. [Keywords] is the
// table of every keyword and its treatment; docs/TOOL-SCHEMAS.md is generated
// from it.
//
// The same lowering and validator serve structured outputs
// (domain/structured): with Options.Output the root may be any schema, and
// with Options.Validating format, pattern (CompilePattern), propertyNames and
// record-style additionalProperties are kept and checked instead of
// described; CheckStrict applies OpenAI's strict-mode rules.
//
// The package is pure: no I/O, no clock, no goroutines. Refusals are
// [*Problem] values whose paths show client-chosen keys only when they are
// plain identifiers, and argument failures are [*ArgumentsError] values that
// name a path and a keyword, never a value.
package toolschema
