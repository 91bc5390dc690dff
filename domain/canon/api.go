package canon

// APIToolsHash binds a tools hash to the API a group was issued through, so
// that a group issued through one API can be continued only through the same
// API (another API's request has other tools, as the continuation check
// sees them). Chat completions keep the plain ToolsHash (api ""), so records
// issued before the Responses API existed still match; any other API is the
// Hash of {"kind":"api_tools","api":…,"tools_hash":…}.
func APIToolsHash(api, toolsHash string) (string, error) {
	if api == "" {
		return toolsHash, nil
	}
	return Hash(map[string]Value{"kind": "api_tools", "api": api, "tools_hash": toolsHash})
}
