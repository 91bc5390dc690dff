package postman

import (
	"bytes"
	"strconv"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
)

// This file assembles tool-call chunks into the deltas of numbered calls:
// which call an entry belongs to (by index, id or position), its name mapped
// back to the client's, the argument limits, and the end-of-stream rules.

// callAcc is what the decoder keeps of one upstream tool call: how the upstream
// identifies it, its names, and the count of its argument bytes. The fragments
// themselves leave in deltas as they come (the consumer of the stream
// assembles them, see chat.ToolCallSet); only those of a call the upstream has
// not named yet are held, until its first delta carries them.
type callAcc struct {
	index     int   // the gateway's index
	upIdx     int64 // the upstream index, when hasUpIdx
	hasUpIdx  bool
	id        string // upstream id, or the internal id
	synthetic bool
	group     string
	upName    string // the name as the upstream sent it
	name      string // the client's name; "" until the upstream named the call
	argLen    int    // argument bytes so far
	held      []byte // the fragments so far while the call is unnamed; nil once announced
	announced bool   // the first delta (with the name) was emitted
}

// finishCalls runs when the upstream ends its stream ([DONE], a done event or
// EOF): a call that was never named is an unverified shape, and a call whose
// arguments are empty (a tool without parameters; both public projects'
// fixtures show "") gets the arguments {} as one last fragment.
func (d *decoder) finishCalls() error {
	for _, c := range d.calls {
		if c.name == "" {
			return d.fail(errs.UpstreamUnverifiedEventShape)
		}
	}
	for _, c := range d.calls {
		if c.argLen == 0 {
			if d.outBytes+2 > d.cfg.maxOutput {
				return d.fail(errs.UpstreamOutputTooLarge)
			}
			c.argLen += 2
			d.outBytes += 2
			d.argBytes += 2
			d.push(chat.Event{Kind: chat.EventToolCall, ToolCall: &chat.ToolCallDelta{
				Index: c.index, UpstreamID: c.id, Synthetic: c.synthetic, UpstreamGroupID: c.group, ArgumentsFragment: "{}",
			}})
		}
	}
	return nil
}

// toolCallChunk accumulates tool-call fragments (the shapes are in
// docs/UPSTREAM.md).
func (d *decoder) toolCallChunk(dm *member, dataKind jkind) error {
	var list *member // an array of entries, or one entry object
	var group []byte
	switch dataKind {
	case kArray:
		list = dm
	case kObject:
		found := 0
		for _, k := range [...]string{"toolCalls", "tool_calls", "calls", "toolCall", "tool_call"} {
			m, err := d.get(d.data, k)
			if err != nil {
				return d.fail(errs.UpstreamUnverifiedEventShape)
			}
			if m != nil && m.kind != kNull {
				list = m
				found++
			}
		}
		if found != 1 {
			return d.fail(errs.UpstreamUnverifiedEventShape)
		}
		g, err := d.get(d.data, "toolCallGroupId")
		if err != nil {
			return d.fail(errs.UpstreamUnverifiedEventShape)
		}
		if g != nil && g.kind != kNull {
			s, ok := str(g, &d.sbuf)
			if !ok || !validID(s) {
				return d.fail(errs.UpstreamUnverifiedEventShape)
			}
			group = []byte(string(s)) // copied: sbuf is reused below
		}
	default:
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}

	d.deltas = d.deltas[:0]
	var code errs.Code
	switch list.kind {
	case kObject:
		code = d.toolEntry(list.val, 0, group)
	case kArray:
		pos := 0
		err := forEachElement(list.val, func(val []byte, kind jkind) error {
			if kind != kObject {
				code = errs.UpstreamUnverifiedEventShape
				return errStop
			}
			if code = d.toolEntry(val, pos, group); code != "" {
				return errStop
			}
			pos++
			return nil
		})
		if err != nil && code == "" {
			code = errs.UpstreamMalformedEvent
		}
	default:
		code = errs.UpstreamUnverifiedEventShape
	}
	if code != "" {
		return d.fail(code)
	}
	if len(d.deltas) == 0 {
		if !d.step(d.fire(completion.Metadata, "")) {
			return errStop
		}
		return nil
	}
	if !d.step(d.fire(completion.Output, "")) {
		return errStop
	}
	d.q = append(d.q, d.deltas...)
	return nil
}

// entryKey is how one tool-call entry identifies its call, besides its
// upstream id: the upstream index (when hasIdx) and the group id (the entry's
// own, else the one of its event's data; nil when neither). The id is kept
// apart so that storing it does not move the group bytes, which point into
// scratch space, to the heap.
type entryKey struct {
	idx    int64
	hasIdx bool
	group  []byte
}

// toolEntry applies one tool-call entry and appends its delta, if any, to
// d.deltas. pos is the entry's position in its event. It returns a failure
// code or "".
func (d *decoder) toolEntry(span []byte, pos int, dataGroup []byte) errs.Code {
	var err error
	if d.entry, err = parseObjectSpan(span, d.entry); err != nil {
		return errs.UpstreamMalformedEvent
	}
	id, k, code := d.entryKey(dataGroup)
	if code != "" {
		return code
	}
	name, args, code := d.entryCall()
	if code != "" {
		return code
	}
	c, code := d.resolveCall(id, &k, pos)
	switch {
	case code != "":
		return code
	case c != nil:
		code = d.mergeCall(c, id, k, name)
	default:
		c, code = d.newCall(id, k, name)
	}
	if code != "" {
		return code
	}
	return d.addArgs(c, args)
}

// entryKey reads an entry's id (id, call_id, callId, tool_call_id, toolCallId),
// index (index, toolCallIndex) and toolCallGroupId. An id is a bounded
// identifier that does not look like an internal one.
func (d *decoder) entryKey(dataGroup []byte) (id string, k entryKey, code errs.Code) {
	idM, err := d.first(d.entry, "id", "call_id", "callId", "tool_call_id", "toolCallId")
	if err != nil {
		return "", k, errs.UpstreamUnverifiedEventShape
	}
	if idM != nil {
		s, ok := str(idM, &d.sbuf)
		if !ok || !validID(s) || bytes.HasPrefix(s, []byte(InternalIDPrefix)) {
			return "", k, errs.UpstreamUnverifiedEventShape
		}
		id = string(s)
	}
	idxM, err := d.first(d.entry, "index", "toolCallIndex")
	if err != nil {
		return "", k, errs.UpstreamUnverifiedEventShape
	}
	if k.hasIdx = idxM != nil; k.hasIdx {
		v, ok := parseUint(idxM.val)
		if idxM.kind != kNumber || !ok || v > maxUpstreamIdx {
			return "", k, errs.UpstreamUnverifiedEventShape
		}
		k.idx = v
	}
	gM, err := d.get(d.entry, "toolCallGroupId")
	if err != nil {
		return "", k, errs.UpstreamUnverifiedEventShape
	}
	k.group = dataGroup
	if gM != nil && gM.kind != kNull {
		s, ok := str(gM, &d.sbuf)
		if !ok || !validID(s) {
			return "", k, errs.UpstreamUnverifiedEventShape
		}
		k.group = s
	}
	return id, k, ""
}

// resolveCall finds the call an entry continues: by explicit index, then by
// id, then, for an entry with neither, by its position in the event (which
// then counts as its index). nil means the entry starts a new call.
func (d *decoder) resolveCall(id string, k *entryKey, pos int) (*callAcc, errs.Code) {
	if k.hasIdx {
		if gi, ok := d.byUp[k.idx]; ok {
			return d.calls[gi], ""
		}
	}
	if id != "" {
		if gi, ok := d.byID[id]; ok {
			c := d.calls[gi]
			if k.hasIdx && c.hasUpIdx && c.upIdx != k.idx {
				return nil, errs.UpstreamUnverifiedEventShape
			}
			return c, ""
		}
	}
	if !k.hasIdx && id == "" {
		k.idx, k.hasIdx = int64(pos), true
		if gi, ok := d.byUp[k.idx]; ok {
			return d.calls[gi], ""
		}
	}
	return nil, ""
}

// mergeCall checks a later entry of call c against what c already has: the id,
// the name and the group may arrive late but never change; an index learnt
// now must not belong to another call.
func (d *decoder) mergeCall(c *callAcc, id string, k entryKey, name []byte) errs.Code {
	if id != "" && c.id != id {
		return errs.UpstreamUnverifiedEventShape // an id that contradicts the call's
	}
	switch {
	case len(name) == 0:
	case c.upName == "":
		// The name arrives on a later chunk of the call (a fixture of both
		// public projects): the call is announced now.
		client, ok := d.mapName(name)
		if !ok {
			return errs.UpstreamUnverifiedEventShape // a tool that was never advertised
		}
		c.upName, c.name = string(name), client
	case string(name) != c.upName:
		return errs.UpstreamUnverifiedEventShape // the repeated name must not change
	}
	if len(k.group) > 0 {
		switch {
		case c.group == "":
			c.group = string(k.group)
		case c.group != string(k.group):
			return errs.UpstreamUnverifiedEventShape
		}
	}
	if k.hasIdx && !c.hasUpIdx {
		if _, taken := d.byUp[k.idx]; taken {
			return errs.UpstreamUnverifiedEventShape
		}
		c.upIdx, c.hasUpIdx = k.idx, true
		d.byUp[k.idx] = c.index
	}
	return ""
}

// newCall starts the next call of the response. A call without an upstream id
// gets the stable internal id InternalIDPrefix + its index and is marked
// synthetic; it is never found by id.
func (d *decoder) newCall(id string, k entryKey, name []byte) (*callAcc, errs.Code) {
	if len(d.calls) >= maxCalls {
		return nil, errs.UpstreamOutputTooLarge
	}
	var client string
	if len(name) > 0 {
		var ok bool
		if client, ok = d.mapName(name); !ok {
			return nil, errs.UpstreamUnverifiedEventShape // a tool that was never advertised
		}
	}
	gi := len(d.calls)
	c := &callAcc{index: gi, upIdx: k.idx, hasUpIdx: k.hasIdx, id: id, group: string(k.group), upName: string(name), name: client}
	if id == "" {
		c.id, c.synthetic = InternalIDPrefix+strconv.Itoa(gi), true
	}
	if d.byID == nil {
		d.byID, d.byUp = map[string]int{}, map[int64]int{}
	}
	if !c.synthetic {
		d.byID[c.id] = gi
	}
	if k.hasIdx {
		d.byUp[k.idx] = gi
	}
	d.calls = append(d.calls, c)
	return c, ""
}

// addArgs counts an entry's argument fragment against the limits and appends
// the call's delta: none while the call is unnamed (the fragment is held), the
// name with every fragment held so far on its first delta, then each non-empty
// fragment.
func (d *decoder) addArgs(c *callAcc, args []byte) errs.Code {
	if c.argLen+len(args) > d.cfg.maxToolArgs {
		return errs.UpstreamToolArgumentsTooLarge
	}
	if d.outBytes+len(args) > d.cfg.maxOutput {
		return errs.UpstreamOutputTooLarge
	}
	d.outBytes += len(args)
	d.argBytes += len(args)
	c.argLen += len(args)
	if c.name == "" {
		c.held = append(c.held, args...) // held until the upstream names the call
		return ""
	}
	frag := args
	switch {
	case !c.announced:
		if len(c.held) > 0 { // the first delta carries the name and every fragment held so far
			frag = append(c.held, args...)
		}
		c.held = nil
	case len(args) == 0:
		return ""
	}
	delta := &chat.ToolCallDelta{Index: c.index, UpstreamID: c.id, Synthetic: c.synthetic, UpstreamGroupID: c.group, ArgumentsFragment: string(frag)}
	if !c.announced {
		delta.Name, c.announced = c.name, true
	}
	d.deltas = append(d.deltas, chat.Event{Kind: chat.EventToolCall, ToolCall: delta})
	return ""
}

// entryCall reads an entry's name (function.name, name, tool.name) and argument
// fragment (function.arguments, arguments, input, input_json; an object or
// array is taken as its raw JSON text). The returned slices stay valid until the
// next entry.
func (d *decoder) entryCall() (name, args []byte, code errs.Code) {
	var nameM, argsM *member
	fnM, err := d.get(d.entry, "function")
	if err != nil {
		return nil, nil, errs.UpstreamUnverifiedEventShape
	}
	if fnM == nil || fnM.kind == kNull {
		if fnM, err = d.get(d.entry, "tool"); err != nil {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
	}
	d.fn = d.fn[:0]
	if fnM != nil && fnM.kind != kNull {
		if fnM.kind != kObject {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
		if d.fn, err = parseObjectSpan(fnM.val, d.fn); err != nil {
			return nil, nil, errs.UpstreamMalformedEvent
		}
		if nameM, err = d.first(d.fn, "name"); err != nil {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
		if argsM, err = d.first(d.fn, "arguments", "input", "input_json"); err != nil {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
	}
	if nameM == nil {
		if nameM, err = d.first(d.entry, "name"); err != nil {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
	}
	if argsM == nil {
		if argsM, err = d.first(d.entry, "arguments", "input", "input_json"); err != nil {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
	}
	if nameM != nil {
		n, ok := str(nameM, &d.lbuf)
		if !ok {
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
		name = n
	}
	if argsM != nil {
		switch argsM.kind {
		case kString:
			args, _ = str(argsM, &d.tbuf)
		case kObject, kArray:
			args = argsM.val
		default:
			return nil, nil, errs.UpstreamUnverifiedEventShape
		}
	}
	return name, args, ""
}

// mapName maps an upstream tool name back to the client's name. The adapter
// advertises tools under their own names (identity); "pmgate.<name>" is also
// accepted, because a client name never contains '.'. Any other name was never
// advertised.
func (d *decoder) mapName(up []byte) (string, bool) {
	if n, ok := d.cfg.tools[string(up)]; ok {
		return n, true
	}
	if rest, ok := bytes.CutPrefix(up, []byte(toolGroupKey+".")); ok {
		n, ok := d.cfg.tools[string(rest)]
		return n, ok
	}
	return "", false
}
