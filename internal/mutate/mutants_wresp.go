package main

// The Responses request's typed read and translation (wire/responses,
// respapi/decode.go, respapi/tools.go): each defect is
// caught by the test its -run names.
func init() {
	const (
		httpapi = "./adapters/httpapi/"
		respapi = "./adapters/httpapi/respapi/"
		decode  = "adapters/httpapi/respapi/decode.go"
		tools   = "adapters/httpapi/respapi/tools.go"
	)
	mutants = append(mutants,
		mutant{"responses: a tool schema kept as sent, not as the route has always kept it", tools,
			"d.Schema = rules.MustJSON(json.RawMessage(def.Parameters))", "d.Schema = def.Parameters", httpapi, "ResponsesToolsAreTheChatRoutesTools"},
		mutant{"responses: a namespaced tool echoed without its namespace", tools,
			`echo["namespace"] = rules.MustJSON(ns)`, `echo["ns"] = rules.MustJSON(ns)`, httpapi, "ResponsesToolsAreTheChatRoutesTools"},
		mutant{"responses: a remembered tool set hands out its own slice", tools,
			"rr.Chat.Tools = append([]chat.Tool(nil), ts.chat...)", "rr.Chat.Tools = ts.chat", respapi, "ResponsesToolsAreTranslationRemembered"},
		// The count is every API's tool-set rule (newTools).
		mutant{"responses: more tools than MAX_TOOLS accepted", "adapters/httpapi/rules/tools.go",
			"\tif len(defs) > st.MaxTools {", "\tif len(defs) > st.MaxTools+99 {", httpapi, "ResponsesToolRefusalsComeInTheirOrder"},
		mutant{"responses: parallel_tool_calls read after the field policy", decode,
			`if req.ParallelToolCalls, err = rules.OptionalBool(wr.ParallelToolCalls, "parallel_tool_calls", true); err != nil {`,
			`if req.ParallelToolCalls, err = rules.OptionalBool(wr.ParallelToolCalls, "parallel_tool_calls", true); err != nil && checkResponsesFields(wr) == nil {`,
			httpapi, "ResponsesRefusesTheEarlierOfTwoWrongFields"},
	)
}
