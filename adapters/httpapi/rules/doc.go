// Package rules holds what every API's translation of a request shares, once:
// the refusal type (Refusal: a stable code, a param path, a fixed detail), the
// owner's settings the translations read (Settings: the models, the tool-set
// limits and their lowering), the body's refusals (not JSON, not an object,
// not text, a repeated member), the field policy (fields accepted and
// ignored, or refused unless default, keyed by JSON member name: FieldRule,
// Policy, CheckFields), the one tool-set rule (ToolSet, NewTools over
// ToolDefs, remembered once per bytes and settings), the one tool-call
// pairing rule of the APIs that answer calls turn by turn (Pairing,
// PairTurns), structured output and thinking levels.
//
// Each API's translation (in adapters/httpapi) reads its wire types and
// feeds these rules, keeping only its own words and paths. Nothing here
// knows HTTP; the transport's error writer renders a Refusal in the shape
// of the route's API.
package rules
