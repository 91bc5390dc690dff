// Package pmconfig is the Postman upstream adapter's configuration: it parses
// and validates the POSTMAN_* variables (docs/CONFIGURATION.md,
// docs/UPSTREAM.md) and maps the public models to upstream models, builds the
// one exact chat URL and the allowlisted request headers, and names the
// upstream secret for redaction (domain/secret). The public model list
// (PROVIDER_MODELS) and the request limits are process settings: cmd/gateway
// parses them, hands the models to Parse and sets Config.Limits.
//
// Parse takes a getenv function and the public models, and reads nothing else: no files, no browser
// storage, no request content. Every refusal is one error carrying
// errs.ConfigInvalid whose message names the variable and the broken rule and
// never contains a configured value (secrets are never echoed, not even in part;
// other values are not echoed either, except an already validated public model
// id).
//
// # Decisions where the documents are silent
//
//   - An empty value is the same as an unset variable (getenv cannot tell them
//     apart). A forbidden variable that is set to "" is therefore accepted.
//   - Check order: strategy, both secrets, the other strategy's variables, the
//     chosen strategy's required variables and their syntax, workspace id,
//     model mapping, user agent and app version, terminal rule, the service's
//     limits. Every refusal is reported at once, except that within one group
//     (the model mapping, the service's limits) only the first is.
//   - POSTMAN_SESSION_COOKIE is 1–4096 bytes of 0x21–0x7e without ';' ',' or
//     '\', so '=', '%' and '"' stay allowed (base64 and
//     signed, URL-encoded session values contain them). A value starting with
//     "postman.sid=" (any case) is refused: it is whole-cookie input.
//   - POSTMAN_WORKSPACE_SUBDOMAIN also refuses the reserved hosts go, identity,
//     id and www (docs/UPSTREAM.md). "xn--" labels are ordinary labels.
//   - POSTMAN_ORIGIN: the host is a lowercase DNS name (LDH labels, ≤253 bytes,
//     last label not all digits), a canonical IPv4 address, or a bracketed
//     canonical IPv6 address without zone (so a loopback emulator works). The
//     port has no leading zero; an explicit ":443" is kept as written.
//   - POSTMAN_CHAT_PATH is at most 1024 bytes of A–Z a–z 0–9 - . _ ~ / : @ $ & +
//     , ; = and has no "." or ".." segment (stricter than refusing "..").
//     The path must survive URL construction unchanged.
//   - The model mapping is checked only when the caller passes models: with
//     none, PROVIDER_MODELS was refused and a mapping error would only repeat
//     it.
//   - Model mapping: POSTMAN_MODEL_MAP and the POSTMAN_WEB_SESSION_SELECTED_MODEL
//     form work for both strategies despite the latter's name. Entries and
//     labels are trimmed; empty entries or labels are refused; a label repeated
//     (or equal to the upstream enum) is kept once. At most 32 labels per model.
//     There is no null/"auto" upstream mapping.
//   - POSTMAN_WEB_SESSION_OBSERVED_MODELS without the selected model is refused.
//   - POSTMAN_USER_AGENT defaults to DefaultUserAgent, a plain product token
//     that imitates no browser; a configured one may contain inner spaces but no
//     leading or trailing space.
//   - POSTMAN_WEB_SESSION_TERMINAL_RULE set on access_token is refused; the
//     access_token rule is fixed (explicit [DONE]) and Config.TerminalRule is "".
//     Config.Rule is the rule either strategy's streams are judged by
//     (completion.RuleFor, the one place that choice is made).
//   - POSTMAN_MAX_QUERY_CHARS and POSTMAN_MAX_TOOLS_UPSTREAM (bounds and
//     defaults in docs/CONFIGURATION.md) are allowed on both
//     strategies: they are the service's reported limits, not a strategy's.
//     POSTMAN_PARALLEL_TOOL_CALLS is exactly "true" or "false"; unset means
//     false on web_session and the client's parallel_tool_calls on
//     access_token (Config.Parallel; the summary shows "false" or "client").
//   - Integers are decimal digits only (domain/setting, shared with the
//     process settings).
//   - Headers on access_token carry no Origin or Referer (the legacy envelope
//     sends none and no browser context is claimed). Header names are the
//     constants of this package in canonical MIME form.
//   - Summary reports secrets and the workspace only as "set". The Config type
//     prints a redacted summary with %v and %#v and drops the secrets and the
//     workspace id in JSON, so an accidental log line cannot leak them.
//   - ChatURL and Headers are derived from the fields on every call (cheap, no
//     shared state to mutate); ChatURL re-runs the post-construction checks.
//   - Secrets() holds only the upstream secret; the wiring adds
//     PROVIDER_API_KEY when it builds the process logger's redactor.
package pmconfig
