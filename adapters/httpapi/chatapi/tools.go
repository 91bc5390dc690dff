package chatapi

// This file translates chat tool definitions and tool_choice; the rules
// every API's tool definitions share are rules.Settings.ToolSet's.

import (
	"encoding/json"
	"strconv"

	"github.com/pmgate/pmgate/adapters/httpapi/rules"
	wchat "github.com/pmgate/pmgate/adapters/httpapi/wire/chat"
	"github.com/pmgate/pmgate/adapters/httpapi/wire/wirejson"

	"github.com/pmgate/pmgate/domain/chat"
)

// decodeTools is the chat tool set (raw: the tools member as sent), derived
// once per bytes and settings (rules.Settings.ToolSet). The parameters schema is kept
// byte-for-byte as sent (it is what the tools hash binds); its lowered form
// under ToolSchemaPolicy (domain/toolschema) is what the upstream receives.
func decodeTools(in *rules.Settings, raw json.RawMessage) ([]chat.Tool, error) {
	return in.ToolSet("", wirejson.Raw(raw), func() ([]rules.ToolDef, error) { return chatToolDefs(wirejson.Raw(raw)), nil })
}

// chatToolDefs reads chat's tool entries. The count comes before any
// entry's shape, and an entry's shape (type, function) before its rules and
// after the earlier entries' (docs/API.md): a wrong shape is the
// definition's first refusal (rules.ToolDef.Err).
func chatToolDefs(raw wirejson.Raw) []rules.ToolDef {
	items := wchat.Tools{Raw: raw}.Entries()
	defs := make([]rules.ToolDef, len(items))
	for i, item := range items {
		p := "tools[" + strconv.Itoa(i) + "]"
		d := &defs[i]
		switch {
		case !item.IsObject():
			d.Err = rules.Invalid(p, "must be an object.")
			continue
		case !item.V.Type.IsString():
			d.Err = rules.Invalid(p+".type", "is required and must be a string.")
			continue
		case item.V.Type.V != "function":
			d.Err = rules.Unsupported(p+".type", "only function tools are supported.")
			continue
		case !item.V.Function.IsObject():
			d.Err = rules.Invalid(p+".function", "is required and must be an object.")
			continue
		}
		fn := &item.V.Function.V
		*d = rules.ToolDef{At: p + ".function", SchemaAt: p + ".function.parameters", Name: fn.Name.V, NameOK: fn.Name.IsString()}
		if desc := fn.Description; desc.IsString() {
			d.Desc = desc.V
		} else if !wirejson.Absent(desc.Kind) {
			d.DescErr = rules.Invalid(p+".function.description", "must be a string.")
		}
		switch params := fn.Parameters; params.Kind() {
		case 0, 'n':
		case '{':
			d.Schema = append([]byte(nil), params...) // the request's memory otherwise
		default:
			d.SchemaErr = rules.Invalid(d.SchemaAt, "must be a JSON schema object.")
		}
		if st := fn.Strict; !wirejson.Absent(st.Kind) {
			b, err := rules.OptionalBool(st, p+".function.strict", false)
			d.Strict, d.StrictErr = &b, err
		}
	}
	return defs
}
