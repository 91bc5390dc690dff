package canon

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"hash"
	"strings"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// hashChunk is how many bytes of a transcript's document are held before
// they are hashed: the buffer stays near it (plus one message) however long
// the transcript is.
const hashChunk = 8 << 10

// transcriptV2Kind is the "kind" of the value-form transcript document.
const transcriptV2Kind = "transcript.v2"

// transcriptV2Tag prefixes every value-form transcript hash, so that a stored
// hash says which rules produced it.
const transcriptV2Tag = transcriptV2Kind + ":"

// TranscriptForm names the rules a stored transcript hash was computed under.
type TranscriptForm int

// The transcript forms (package documentation, "Transcript forms").
const (
	// TranscriptUnknown is a string no function of this package produces.
	TranscriptUnknown TranscriptForm = iota
	// TranscriptExact is [TranscriptHash]: argument strings compared byte for byte.
	TranscriptExact
	// TranscriptValues is [TranscriptHashV2]: arguments compared as JSON values.
	TranscriptValues
)

// FormOf reports the form of a transcript hash produced by this package.
func FormOf(hash string) TranscriptForm {
	switch {
	case strings.HasPrefix(hash, transcriptV2Tag+"sha256:"):
		return TranscriptValues
	case strings.HasPrefix(hash, "sha256:"):
		return TranscriptExact
	default:
		return TranscriptUnknown
	}
}

// Normalize returns v with every Number replaced by its [CanonicalNumber]
// spelling, so that values equal as JSON values are identical. It rewrites
// arrays and objects in place (use it on values it may own, such as a fresh
// ParseJSON result) and returns the result. An invalid Number is kept as it
// is; Marshal refuses it later.
func Normalize(v Value) Value {
	switch x := v.(type) {
	case Number:
		if c, ok := CanonicalNumber(string(x)); ok {
			return Number(c)
		}
		return x
	case []Value:
		for i := range x {
			x[i] = Normalize(x[i])
		}
		return x
	case map[string]Value:
		for k, e := range x {
			x[k] = Normalize(e)
		}
		return x
	default:
		return v
	}
}

// Equal reports whether two normalized values are the same JSON value: same
// type, same strings and canonical number literals, arrays element by element,
// objects with the same keys and equal members.
func Equal(a, b Value) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case Number:
		y, ok := b.(Number)
		return ok && x == y
	case []Value:
		y, ok := b.([]Value)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]Value:
		y, ok := b.(map[string]Value)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			f, ok := y[k]
			if !ok || !Equal(e, f) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// ArgumentsValue returns the value form of one argument string: its parsed,
// normalized JSON value, or ok=false when it is not one JSON text (package
// documentation, "Transcript forms").
func ArgumentsValue(arguments string) (v Value, ok bool) {
	v, err := ParseJSON([]byte(arguments))
	if err != nil {
		return nil, false
	}
	return Normalize(v), true
}

// Defaults is the tree of `default` values one tool's parameter schema
// declares along chains of `properties` (package documentation, "Schema
// defaults"). The nil *Defaults declares none.
type Defaults struct {
	props map[string]propDefault
}

type propDefault struct {
	value  Value // normalized
	has    bool
	nested *Defaults
}

// DefaultsByTool maps a tool name to its schema defaults.
type DefaultsByTool map[string]*Defaults

// SchemaDefaults collects the defaults of a tool's original `parameters`:
// for every member k of the root's `properties` whose schema is an object with
// a `default`, that default; and the same, recursively, for the `properties`
// of k's schema. Nothing else is read: `$ref`, `anyOf`, `oneOf`, `allOf`,
// `items` and `additionalProperties` never contribute a default. Empty
// parameters declare none; invalid JSON is refused with errs.InvalidRequest.
func SchemaDefaults(parameters []byte) (*Defaults, error) {
	s, err := schemaValue(parameters)
	if err != nil {
		return nil, err
	}
	return defaultsOf(s), nil
}

func defaultsOf(schema Value) *Defaults {
	obj, _ := schema.(map[string]Value)
	props, _ := obj["properties"].(map[string]Value)
	var d *Defaults
	for k, ps := range props {
		p, ok := ps.(map[string]Value)
		if !ok {
			continue
		}
		var pd propDefault
		if dv, ok := p["default"]; ok {
			pd.value, pd.has = Normalize(dv), true
		}
		pd.nested = defaultsOf(p)
		if !pd.has && pd.nested == nil {
			continue
		}
		if d == nil {
			d = &Defaults{props: map[string]propDefault{}}
		}
		d.props[k] = pd
	}
	return d
}

// ToolDefaults returns the schema defaults of each tool by name, from the
// tools' original parameters. Tools without defaults are absent.
func ToolDefaults(tools []chat.Tool) (DefaultsByTool, error) {
	out := DefaultsByTool{}
	for _, t := range tools {
		d, err := SchemaDefaults(t.Parameters)
		if err != nil {
			return nil, err
		}
		if d != nil {
			out[t.Name] = d
		}
	}
	return out, nil
}

// hasDefaultValued reports whether echo holds, at some depth d describes, a
// property equal to its default: the only properties the echo rule can drop.
func hasDefaultValued(echo map[string]Value, d *Defaults) bool {
	if d == nil {
		return false
	}
	for k, pd := range d.props {
		v, ok := echo[k]
		if !ok {
			continue
		}
		if pd.has && Equal(v, pd.value) {
			return true
		}
		if o, isObj := v.(map[string]Value); isObj && hasDefaultValued(o, pd.nested) {
			return true
		}
	}
	return false
}

// dropEchoDefaults returns echo without the properties the issued object
// lacks and whose value equals their schema default, looking into properties
// present on both sides as objects. echo is never modified; changed reports
// whether the result differs from it.
func dropEchoDefaults(echo, issued map[string]Value, d *Defaults) (out map[string]Value, changed bool) {
	if d == nil {
		return echo, false
	}
	out = echo
	for k, pd := range d.props {
		v, inEcho := echo[k]
		if !inEcho {
			continue
		}
		iv, inIssued := issued[k]
		var nv Value
		drop := false
		switch {
		case !inIssued:
			drop = pd.has && Equal(v, pd.value)
		case pd.nested != nil:
			eo, ok1 := v.(map[string]Value)
			io, ok2 := iv.(map[string]Value)
			if !ok1 || !ok2 {
				continue
			}
			sub, ch := dropEchoDefaults(eo, io, pd.nested)
			if !ch {
				continue
			}
			nv = sub
		default:
			continue
		}
		if !changed {
			out = make(map[string]Value, len(echo))
			for ek, ev := range echo {
				out[ek] = ev
			}
			changed = true
		}
		if drop {
			delete(out, k)
		} else {
			out[k] = nv
		}
	}
	return out, changed
}

// IssuedCall is a tool call as the gateway showed it to the client: the
// public id, the tool name and the exact argument string.
type IssuedCall struct {
	ID, Name, Arguments string
}

// echoedArguments returns the value form of one echoed call's arguments, with
// echo-added defaults dropped when the call is issued (same id and name), both
// sides are objects and the tool declares defaults.
func echoedArguments(c chat.ToolCall, v Value, d *Defaults, iss IssuedCall, issued bool) Value {
	eo, isObj := v.(map[string]Value)
	if !issued || !isObj || iss.Name != c.Name || !hasDefaultValued(eo, d) {
		return v
	}
	iv, ok := ArgumentsValue(iss.Arguments)
	io, isObj := iv.(map[string]Value)
	if !ok || !isObj {
		return v
	}
	out, _ := dropEchoDefaults(eo, io, d)
	return out
}

// callValueV2 is one tool call of the value form.
func callValueV2(c chat.ToolCall, args Value, parsed bool) Value {
	cv := map[string]Value{"id": c.ID, "name": c.Name}
	if parsed {
		cv["arguments"] = args
	} else {
		cv["arguments_text"] = c.Arguments
	}
	return cv
}

// messageValueV2 is MessageValue with each tool call's arguments in value form;
// args(i, call) gives the value of call i and whether it parsed.
func messageValueV2(m chat.Message, args func(i int, c chat.ToolCall) (Value, bool)) map[string]Value {
	v := MessageValue(m).(map[string]Value)
	if tc, ok := v["tool_calls"]; ok {
		calls := tc.([]Value)
		for i, c := range m.ToolCalls {
			a, parsed := args(i, c)
			calls[i] = callValueV2(c, a, parsed)
		}
	}
	return v
}

// MessageValueV2 returns the value form of a message (package documentation,
// "Transcript forms"): MessageValue, except that each tool call is
// {"id","name","arguments":<ArgumentsValue>} when its argument string is one
// JSON text and {"id","name","arguments_text":<exact string>} otherwise.
func MessageValueV2(m chat.Message) Value { return messageValueV2(m, argumentsOf) }

// argumentsOf is a tool call's arguments in value form, and whether they
// parsed.
func argumentsOf(_ int, c chat.ToolCall) (Value, bool) { return ArgumentsValue(c.Arguments) }

// appendMessageV2 writes the canonical bytes of messageValueV2(m, args)
// without building the value: the members in their key order (content, name,
// role, tool_call_id, tool_calls) and each tool call's (arguments or
// arguments_text, id, name), present when MessageValue has them. A
// transcript's hash writes every message this way, so a long transcript
// costs a pass over its text, not a map per message.
func appendMessageV2(b []byte, m chat.Message, args func(i int, c chat.ToolCall) (Value, bool)) ([]byte, error) {
	withCalls := m.Role == chat.RoleAssistant && len(m.ToolCalls) > 0
	var err error
	b = append(b, `{"content":`...)
	if m.Content == nil || withCalls && *m.Content == "" {
		b = append(b, "null"...)
	} else if b, err = appendString(b, *m.Content); err != nil {
		return nil, err
	}
	if m.Role != chat.RoleAssistant && m.Name != "" {
		if b, err = appendString(append(b, `,"name":`...), m.Name); err != nil {
			return nil, err
		}
	}
	if b, err = appendString(append(b, `,"role":`...), string(m.Role)); err != nil {
		return nil, err
	}
	if m.Role == chat.RoleTool {
		if b, err = appendString(append(b, `,"tool_call_id":`...), m.ToolCallID); err != nil {
			return nil, err
		}
	}
	if withCalls {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			if v, parsed := args(i, c); parsed {
				b, err = appendValue(append(b, `{"arguments":`...), v, 5) // document, messages, message, calls, call
			} else {
				b, err = appendString(append(b, `{"arguments_text":`...), c.Arguments)
			}
			if err == nil {
				b, err = appendString(append(b, `,"id":`...), c.ID)
			}
			if err == nil {
				b, err = appendString(append(b, `,"name":`...), c.Name)
			}
			if err != nil {
				return nil, err
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// TranscriptHashV2 is the value-form transcript hash: the tag
// "transcript.v2:" followed by the Hash of
// {"kind":"transcript.v2","messages":[MessageValueV2…]}, where, for every tool
// call whose id and name are those of an issued call, the properties the echo
// added with their schema default (defaults of the tool with that name) are
// dropped from its arguments first (package documentation, "Echoed
// arguments").
//
// At admission it is called with the transcript the client will echo (the
// request's messages and the assistant message the gateway returns) and no
// issued calls: the issued arguments are taken as they are. For a later
// request it is called with that request's copy of the transcript, the tools'
// defaults and the calls the gateway issued in it; both hashes are equal
// exactly when the request echoes the transcript under the rules. Invalid
// UTF-8 outside argument strings is refused with errs.InvalidRequest.
//
// The document is hashed as it is written (transcriptWriter, as PrepareEcho
// writes it too).
func TranscriptHashV2(msgs []chat.Message, defaults DefaultsByTool, issued []IssuedCall) (string, error) {
	byID := issuedByID(issued)
	w := newTranscriptWriter()
	for _, m := range msgs {
		err := w.message(m, func(_ int, c chat.ToolCall) (Value, bool) {
			v, ok := ArgumentsValue(c.Arguments)
			if !ok {
				return nil, false
			}
			iss, isIssued := byID[c.ID]
			return echoedArguments(c, v, defaults[c.Name], iss, isIssued), true
		})
		if err != nil {
			return "", err
		}
	}
	return w.sum(), nil
}

// transcriptWriter hashes the value-form transcript document as it is
// written (the bytes of Hash exactly): the header, the messages with a comma
// before each but the first, and the end. It holds about hashChunk bytes at a
// time, so a long transcript costs one pass and never a copy of itself.
// Its state after some messages can be kept and gone on from (Echo).
type transcriptWriter struct {
	h    hash.Hash
	b    []byte
	some bool // a message was written: the next one takes a comma
}

func newTranscriptWriter() transcriptWriter {
	w := transcriptWriter{h: sha256.New(), b: make([]byte, 0, 512)}
	w.b = append(append(w.b, Version...), "\n{\"kind\":\""+transcriptV2Kind+"\",\"messages\":["...)
	return w
}

// resumeTranscriptWriter goes on from a writer's state: the next message
// is written as it is (the state holds the comma it takes).
func resumeTranscriptWriter(state []byte) (transcriptWriter, error) {
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		return transcriptWriter{}, errs.Wrap(err, errs.InternalError)
	}
	return transcriptWriter{h: h}, nil
}

// message writes m in value form, each tool call's arguments given by args.
func (w *transcriptWriter) message(m chat.Message, args func(i int, c chat.ToolCall) (Value, bool)) error {
	if w.some {
		w.b = append(w.b, ',')
	}
	w.some = true
	var err error
	if w.b, err = appendMessageV2(w.b, m, args); err != nil {
		return err
	}
	if len(w.b) >= hashChunk {
		w.h.Write(w.b)
		w.b = w.b[:0]
	}
	return nil
}

// state is the hash's state after what was written and the comma the next
// message takes, if any.
func (w *transcriptWriter) state() ([]byte, error) {
	if w.some {
		w.b = append(w.b, ',')
	}
	w.h.Write(w.b)
	w.b = w.b[:0]
	state, err := w.h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil, errs.Wrap(err, errs.InternalError)
	}
	return state, nil
}

// sum ends the document and returns its tagged hash.
func (w *transcriptWriter) sum() string {
	w.h.Write(w.b)
	w.h.Write(documentEnd)
	return transcriptV2Tag + "sha256:" + hex.EncodeToString(w.h.Sum(nil))
}

var documentEnd = []byte("]}")

func issuedByID(issued []IssuedCall) map[string]IssuedCall {
	byID := make(map[string]IssuedCall, len(issued))
	for _, c := range issued {
		byID[c.ID] = c
	}
	return byID
}

// Echo is a continuation prefix prepared for comparison with a stored
// value-form transcript hash. Everything that does not depend on the issued
// calls — hashing every message but the last, parsing the last message's
// arguments — is done once by PrepareEcho, outside any lock; Hash then only
// looks at the issued arguments of the last message's calls.
type Echo struct {
	state    []byte          // the transcript writer's state after the messages before the last, with their comma
	headIDs  map[string]bool // tool call ids of the messages before the last
	last     map[string]Value
	lastMsg  chat.Message
	lastArgs []echoArg
	lastRaw  []byte // Marshal(last)
	empty    bool   // no messages at all
	defaults DefaultsByTool
	prefix   []chat.Message // the messages prepared (the caller's, not a copy)
}

type echoArg struct {
	value      Value
	parsed     bool
	candidates bool // an object holding a default-valued property
}

// PrepareEcho prepares msgs, a continuation's prefix, for [Echo.Hash] with the
// defaults of the request's tools. Invalid UTF-8 outside argument strings is
// refused with errs.InvalidRequest. The caller must not modify msgs afterwards.
func PrepareEcho(msgs []chat.Message, defaults DefaultsByTool) (*Echo, error) {
	w := newTranscriptWriter()
	e := &Echo{headIDs: map[string]bool{}, defaults: defaults, empty: len(msgs) == 0, prefix: msgs}
	for i, m := range msgs {
		if i == len(msgs)-1 {
			break
		}
		if err := w.message(m, argumentsOf); err != nil {
			return nil, err
		}
		for _, c := range m.ToolCalls {
			e.headIDs[c.ID] = true
		}
	}
	state, err := w.state()
	if err != nil {
		return nil, err
	}
	e.state = state
	if e.empty {
		return e, nil
	}
	e.lastMsg = msgs[len(msgs)-1]
	e.lastArgs = make([]echoArg, len(e.lastMsg.ToolCalls))
	e.last = messageValueV2(e.lastMsg, func(i int, c chat.ToolCall) (Value, bool) {
		v, ok := ArgumentsValue(c.Arguments)
		o, isObj := v.(map[string]Value)
		e.lastArgs[i] = echoArg{value: v, parsed: ok, candidates: isObj && hasDefaultValued(o, defaults[c.Name])}
		return v, ok
	})
	if e.lastRaw, err = Marshal(e.last); err != nil {
		return nil, err
	}
	return e, nil
}

// Hash returns TranscriptHashV2(msgs, defaults, issued) for the prepared msgs
// and defaults, when no issued id appears before the last message (a genuine
// echo of a transcript that ended with the issued calls never has one); when
// one does, it refuses with errs.ContinuationHistoryMismatch instead. Hash
// does not modify the Echo and may be called any number of times.
func (e *Echo) Hash(issued []IssuedCall) (string, error) {
	for _, c := range issued {
		if e.headIDs[c.ID] {
			// The admitted transcript cannot hold ids drawn after it.
			return "", errs.Newf(errs.ContinuationHistoryMismatch, "canon: an issued tool call id appears before the last message")
		}
	}
	raw := e.lastRaw
	if !e.empty {
		byID := issuedByID(issued)
		var calls []Value
		for i, c := range e.lastMsg.ToolCalls {
			a := e.lastArgs[i]
			iss, isIssued := byID[c.ID]
			if !a.candidates || !isIssued {
				continue
			}
			v := echoedArguments(c, a.value, e.defaults[c.Name], iss, true)
			if calls == nil {
				calls = append([]Value(nil), e.last["tool_calls"].([]Value)...)
			}
			calls[i] = callValueV2(c, v, true)
		}
		if calls != nil {
			m := make(map[string]Value, len(e.last))
			for k, v := range e.last {
				m[k] = v
			}
			m["tool_calls"] = calls
			var err error
			if raw, err = Marshal(m); err != nil {
				return "", err
			}
		}
	}
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(e.state); err != nil {
		return "", errs.Wrap(err, errs.InternalError)
	}
	h.Write(raw)
	h.Write(documentEnd)
	return transcriptV2Tag + "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// TranscriptHashOf returns TranscriptHashV2(append(msgs, more...), nil, nil),
// the hash of the transcript a turn that continued this prefix binds its
// next tool calls to. When msgs begins with the very messages e was prepared
// from (the same slice, not a copy) the hash goes on from e's state, so only
// the messages after the prefix are written; otherwise it is computed whole.
func (e *Echo) TranscriptHashOf(msgs []chat.Message, more ...chat.Message) (string, error) {
	n := len(e.prefix)
	if n == 0 || len(msgs) < n || &msgs[0] != &e.prefix[0] {
		return TranscriptHashV2(append(append(make([]chat.Message, 0, len(msgs)+len(more)), msgs...), more...), nil, nil)
	}
	w, err := resumeTranscriptWriter(e.state)
	if err != nil {
		return "", err
	}
	// The state ends after the messages before the prefix's last: the last
	// is written next.
	for _, m := range append(msgs[n-1:len(msgs):len(msgs)], more...) {
		if err := w.message(m, argumentsOf); err != nil {
			return "", err
		}
	}
	return w.sum(), nil
}
