package toolschema

import (
	"fmt"
	"strings"
)

// Action is what happens to a keyword of a caller's tool schema.
type Action string

// The actions of the keyword table.
const (
	// Kept: the keyword reaches the upstream unchanged and constrains arguments.
	Kept Action = "kept"
	// Described: removed and rendered into the (sub)schema's description.
	Described Action = "moved to description"
	// Inlined: the referenced definition replaces the reference.
	Inlined Action = "inlined"
	// MadeTrue: replaced by true, with the value schema rendered into the description.
	MadeTrue Action = "made true + described"
	// Removed: dropped without a trace; it cannot change which arguments are valid.
	Removed Action = "removed"
	// Refused: the request is refused with unsupported_parameter at the keyword's path.
	Refused Action = "refused"
)

// Keyword is one row of the keyword table: a JSON Schema keyword (in one form
// when its forms are treated differently), the vocabulary it comes from and its
// treatment under each policy. docs/TOOL-SCHEMAS.md is generated from this
// list, and every row is exercised by the package tests.
type Keyword struct {
	Name       string
	Form       string // "" when every form is treated alike
	Vocabulary string
	Lower      Action
	Strict     Action
	Note       string // why, in one short sentence; "" when obvious
}

// Vocabularies, as the table names them.
const (
	vCore        = "core"
	vApplicator  = "applicator"
	vUnevaluated = "unevaluated"
	vValidation  = "validation"
	vFormat      = "format-annotation"
	vContent     = "content"
	vMetaData    = "meta-data"
	vDraft07     = "draft-07"
	vDraft2019   = "draft 2019-09"
	vVendor      = "vendor"
)

const (
	noteChangesValidity = "changes which arguments are valid; cannot be lowered faithfully"
	noteAnnotation      = "does not change the shape of the arguments; validated by the caller"
)

// Keywords returns the keyword table in documentation order.
func Keywords() []Keyword { return append([]Keyword(nil), keywords...) }

var keywords = []Keyword{
	{"$schema", "", vCore, Kept, Kept, ""},
	{"$id", "at the root", vCore, Kept, Kept, ""},
	{"$id", "below the root", vCore, Removed, Kept, "a `$ref` below a nested `$id` is refused, so it names nothing the lowered schema uses"},
	{"$ref", "`#/$defs/…` or `#/definitions/…`", vCore, Inlined, Refused, "acyclic only, within the depth and size limits (see above)"},
	{"$ref", "anything else (remote, other pointers, anchors)", vCore, Refused, Refused, "the target is unknown or outside this schema"},
	{"$defs", "", vCore, Removed, Refused, "after its references are inlined"},
	{"$anchor", "", vCore, Removed, Refused, "references to anchors are refused, so an anchor names nothing"},
	{"$dynamicAnchor", "", vCore, Removed, Refused, "`$dynamicRef` is refused, so a dynamic anchor names nothing"},
	{"$dynamicRef", "", vCore, Refused, Refused, "dynamic scope cannot be inlined"},
	{"$vocabulary", "", vCore, Removed, Refused, "only meaningful in a meta-schema"},
	{"$comment", "", vCore, Described, Refused, ""},
	{"allOf", "", vApplicator, Kept, Kept, ""},
	{"anyOf", "", vApplicator, Kept, Kept, ""},
	{"oneOf", "", vApplicator, Kept, Kept, ""},
	{"not", "", vApplicator, Refused, Refused, noteChangesValidity},
	{"if", "", vApplicator, Refused, Refused, noteChangesValidity},
	{"then", "", vApplicator, Refused, Refused, noteChangesValidity},
	{"else", "", vApplicator, Refused, Refused, noteChangesValidity},
	{"dependentSchemas", "", vApplicator, Refused, Refused, noteChangesValidity},
	{"prefixItems", "", vApplicator, Refused, Refused, noteChangesValidity},
	{"items", "one schema", vApplicator, Kept, Kept, ""},
	{"contains", "", vApplicator, Refused, Refused, noteChangesValidity},
	{"properties", "", vApplicator, Kept, Kept, ""},
	{"patternProperties", "", vApplicator, Refused, Refused, noteChangesValidity},
	{"additionalProperties", "boolean", vApplicator, Kept, Kept, ""},
	{"additionalProperties", "schema", vApplicator, MadeTrue, Refused, "e.g. `z.record(z.string())`; the value schema is not enforced"},
	{"propertyNames", "", vApplicator, Described, Refused, noteAnnotation},
	{"unevaluatedItems", "true", vUnevaluated, Removed, Refused, "allows everything"},
	{"unevaluatedItems", "anything else", vUnevaluated, Refused, Refused, noteChangesValidity},
	{"unevaluatedProperties", "true", vUnevaluated, Removed, Refused, "allows everything"},
	{"unevaluatedProperties", "anything else", vUnevaluated, Refused, Refused, noteChangesValidity},
	{"type", "", vValidation, Kept, Kept, "`integer` accepts numbers with a zero fraction (`1.0`)"},
	{"enum", "", vValidation, Kept, Kept, "compared as JSON values (`1` equals `1.0`)"},
	{"const", "", vValidation, Kept, Kept, "compared as JSON values"},
	{"multipleOf", "", vValidation, Kept, Kept, ""},
	{"maximum", "", vValidation, Kept, Kept, ""},
	{"exclusiveMaximum", "number", vValidation, Kept, Kept, ""},
	{"exclusiveMaximum", "boolean (draft-04)", vValidation, Refused, Refused, "use the number form"},
	{"minimum", "", vValidation, Kept, Kept, ""},
	{"exclusiveMinimum", "number", vValidation, Kept, Kept, ""},
	{"exclusiveMinimum", "boolean (draft-04)", vValidation, Refused, Refused, "use the number form"},
	{"maxLength", "", vValidation, Kept, Kept, "counted in Unicode code points"},
	{"minLength", "", vValidation, Kept, Kept, "counted in Unicode code points"},
	{"pattern", "", vValidation, Described, Refused, noteAnnotation},
	{"maxItems", "", vValidation, Kept, Kept, ""},
	{"minItems", "", vValidation, Kept, Kept, ""},
	{"uniqueItems", "", vValidation, Kept, Kept, ""},
	{"maxContains", "", vValidation, Refused, Refused, noteChangesValidity},
	{"minContains", "", vValidation, Refused, Refused, noteChangesValidity},
	{"maxProperties", "", vValidation, Kept, Kept, ""},
	{"minProperties", "", vValidation, Kept, Kept, ""},
	{"required", "", vValidation, Kept, Kept, ""},
	{"dependentRequired", "", vValidation, Refused, Refused, noteChangesValidity},
	{"format", "", vFormat, Described, Refused, "an annotation in 2020-12; e.g. `uri`, `email`, `uuid`, `date-time`"},
	{"contentEncoding", "", vContent, Described, Refused, noteAnnotation},
	{"contentMediaType", "", vContent, Described, Refused, noteAnnotation},
	{"contentSchema", "", vContent, Described, Refused, noteAnnotation},
	{"title", "", vMetaData, Kept, Kept, ""},
	{"description", "", vMetaData, Kept, Kept, "lowering appends its notes here"},
	{"default", "", vMetaData, Kept, Kept, ""},
	{"deprecated", "", vMetaData, Kept, Kept, ""},
	{"readOnly", "", vMetaData, Kept, Kept, ""},
	{"writeOnly", "", vMetaData, Kept, Kept, ""},
	{"examples", "", vMetaData, Kept, Kept, ""},
	{"definitions", "", vDraft07, Removed, Refused, "after its references are inlined"},
	{"dependencies", "", vDraft07, Refused, Refused, noteChangesValidity},
	{"items", "array (tuple)", vDraft07, Refused, Refused, noteChangesValidity},
	{"additionalItems", "", vDraft07, Refused, Refused, noteChangesValidity},
	{"$recursiveRef", "", vDraft2019, Refused, Refused, "dynamic scope cannot be inlined"},
	{"$recursiveAnchor", "", vDraft2019, Removed, Refused, "`$recursiveRef` is refused, so it names nothing"},
	{"x-…", "any `x-` prefixed key", vVendor, Described, Refused, ""},
	{"any other keyword", "", "", Refused, Refused, "its meaning is unknown, so lowering it could change which arguments are valid"},
}

// Table renders the keyword table as Markdown, as docs/TOOL-SCHEMAS.md shows
// it (a test keeps the document in step).
func Table() string {
	var b strings.Builder
	b.WriteString("| keyword | form | vocabulary | `lower` (default) | `strict` | note |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, k := range keywords {
		name := "`" + k.Name + "`"
		if k.Name == "any other keyword" {
			name = k.Name
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", name, k.Form, k.Vocabulary, k.Lower, k.Strict, k.Note)
	}
	return b.String()
}
