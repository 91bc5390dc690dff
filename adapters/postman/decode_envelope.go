package postman

import (
	"bytes"

	"github.com/cockroachdb/errors"

	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
)

// This file reads one event's JSON envelope: its members, its type, the model
// label every event is checked for, and the dispatch to the type's handler.

// get returns the one member named key, nil when absent, errDup when repeated.
func (d *decoder) get(ms []member, key string) (*member, error) {
	var found *member
	for i := range ms {
		m := &ms[i]
		k := m.key
		if m.keyEsc {
			d.kbuf = unquote(m.key, true, d.kbuf)
			k = d.kbuf
		}
		if string(k) == key {
			if found != nil {
				return nil, errDup
			}
			found = m
		}
	}
	return found, nil
}

// first returns the first of keys present with a non-null value.
func (d *decoder) first(ms []member, keys ...string) (*member, error) {
	for _, k := range keys {
		m, err := d.get(ms, k)
		if err != nil {
			return nil, err
		}
		if m != nil && m.kind != kNull {
			return m, nil
		}
	}
	return nil, nil
}

// envelope holds the top-level members the decoder reads.
type envelope struct {
	eventType, typ, data, result *member
	meta, model, modelID, sel    *member
}

// errShape reports an envelope whose type cannot be read.
var errShape = errors.New("postman: unverified event shape")

// envelope reads the top-level members of the current event; a repeated one
// is errDup.
func (d *decoder) envelope() (e envelope, err error) {
	for _, f := range [...]struct {
		key string
		dst **member
	}{
		{"eventType", &e.eventType}, {"type", &e.typ}, {"data", &e.data}, {"result", &e.result},
		{"metadata", &e.meta}, {"model", &e.model}, {"modelId", &e.modelID}, {"selectedModel", &e.sel},
	} {
		if *f.dst, err = d.get(d.top, f.key); err != nil {
			return e, err
		}
	}
	return e, nil
}

// eventType reads the envelope's type: eventType, or type when eventType is
// absent; both present must agree.
func (d *decoder) eventType(e *envelope) (evType, error) {
	name := func(m *member) ([]byte, error) {
		if m.kind != kString {
			return nil, errShape
		}
		c := strContent(m.val)
		if bytes.IndexByte(c, '\\') >= 0 {
			return nil, errShape // event names are plain identifiers
		}
		return c, nil
	}
	var n1, n2 []byte
	var err error
	if e.eventType != nil && e.eventType.kind != kNull {
		if n1, err = name(e.eventType); err != nil {
			return evUnknown, err
		}
	}
	if e.typ != nil && e.typ.kind != kNull {
		if n2, err = name(e.typ); err != nil {
			return evUnknown, err
		}
	}
	switch {
	case n1 != nil && n2 != nil && !bytes.Equal(n1, n2):
		return evUnknown, errShape
	case n1 == nil:
		n1 = n2
	}
	if n1 == nil {
		if e.result != nil && e.result.kind == kString && bytes.EqualFold(strContent(e.result.val), []byte("failure")) {
			return evResultFailure, nil
		}
		return evUnknown, errShape
	}
	return lookupEvType(n1), nil
}

// event handles one JSON payload.
func (d *decoder) event(p []byte) error {
	var err error
	d.top, err = parseTopObject(p, d.top)
	switch {
	case errors.Is(err, errNotObject):
		d.countType(evUnknown)
		return d.fail(errs.UpstreamUnverifiedEventShape)
	case err != nil:
		d.countType(evUnknown)
		return d.fail(errs.UpstreamMalformedEvent)
	}
	env, err := d.envelope()
	if err != nil {
		d.countType(evUnknown)
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}
	typ, err := d.eventType(&env)
	d.lastType = typ
	d.countType(typ)
	if err != nil || typ == evUnknown {
		return d.fail(errs.UpstreamUnverifiedEventShape)
	}

	// The data object, parsed once for the label and the handler.
	dataKind := kNull
	d.data = d.data[:0]
	if env.data != nil {
		dataKind = env.data.kind
		if dataKind == kObject {
			if d.data, err = parseObjectSpan(env.data.val, d.data); err != nil {
				return d.fail(errs.UpstreamMalformedEvent)
			}
		}
	}

	if code := d.checkModel(&env, dataKind == kObject); code != "" {
		return d.fail(code)
	}
	found, code := d.conversationIn(dataKind == kObject)
	if code != "" {
		return d.fail(code)
	}

	switch typ {
	case evTextChunk:
		return d.textChunk(dataKind)
	case evConversation:
		if dataKind != kObject || !found {
			return d.fail(errs.UpstreamUnverifiedEventShape) // a conversation event names its conversation
		}
	case evDoneEvent:
		if dataKind != kNull && dataKind != kObject {
			return d.fail(errs.UpstreamUnverifiedEventShape)
		}
		if err := d.finishCalls(); err != nil {
			return err
		}
		if !d.step(d.fire(completion.DoneEvent, "")) {
			return errStop
		}
		return nil
	case evUsage:
		return d.usage(dataKind)
	case evFailure, evError, evResultFailure:
		return d.fail(d.failureCode(&env, dataKind))
	case evToolCallChunk:
		if d.cfg.tools == nil {
			return d.fail(errs.UpstreamUnsupportedEvent)
		}
		return d.toolCallChunk(env.data, dataKind)
	case evLoopApprovalChunk:
		return d.loopApproval(dataKind)
	}
	// conversation, thinkingChunk, thinkingComplete, ping, info, planningChunk,
	// progressUpdate, todoChunk, streamingFormat, notification, usageUpdate:
	// valid and ignored.
	if !d.step(d.fire(completion.Metadata, "")) {
		return errStop
	}
	return nil
}

// checkModel finds the observed model label (docs/UPSTREAM.md) and compares it; it
// returns the failure code, or "".
func (d *decoder) checkModel(env *envelope, dataObject bool) errs.Code {
	label, code := d.labelIn(env.meta, env.model, env.modelID, env.sel)
	if code != "" {
		return code
	}
	if label == nil && dataObject {
		var ms [4]*member
		for i, k := range [...]string{"metadata", "model", "modelId", "selectedModel"} {
			m, err := d.get(d.data, k)
			if err != nil {
				return errs.UpstreamUnverifiedEventShape
			}
			ms[i] = m
		}
		if label, code = d.labelIn(ms[0], ms[1], ms[2], ms[3]); code != "" {
			return code
		}
	}
	if label == nil {
		return ""
	}
	match := len(label) <= maxLabelBytes && d.knownLabel(label)
	if !d.labelSeen {
		d.labelSeen = true
		d.label = string(label[:min(len(label), maxLabelBytes)])
	}
	if !match {
		d.labelMatch = false
		return errs.UpstreamModelMismatch
	}
	return ""
}

func (d *decoder) knownLabel(label []byte) bool {
	for _, o := range d.cfg.observed {
		if string(label) == o {
			return true
		}
	}
	return false
}

// labelIn returns the first non-empty of metadata.model, metadata.modelId,
// metadata.selectedModel, model, modelId, selectedModel of one object.
func (d *decoder) labelIn(meta, model, modelID, sel *member) ([]byte, errs.Code) {
	if meta != nil && meta.kind != kNull {
		if meta.kind != kObject {
			return nil, errs.UpstreamUnverifiedEventShape
		}
		var err error
		d.metaSpan = meta.val
		if d.meta, err = parseObjectSpan(meta.val, d.meta); err != nil {
			return nil, errs.UpstreamMalformedEvent
		}
		for _, k := range [...]string{"model", "modelId", "selectedModel"} {
			m, err := d.get(d.meta, k)
			if err != nil {
				return nil, errs.UpstreamUnverifiedEventShape
			}
			l, code := d.labelValue(m)
			if code != "" || l != nil {
				return l, code
			}
		}
	}
	for _, m := range [...]*member{model, modelID, sel} {
		l, code := d.labelValue(m)
		if code != "" || l != nil {
			return l, code
		}
	}
	return nil, ""
}

func (d *decoder) labelValue(m *member) ([]byte, errs.Code) {
	if m == nil || m.kind == kNull {
		return nil, ""
	}
	l, ok := str(m, &d.lbuf)
	if !ok {
		return nil, errs.UpstreamUnverifiedEventShape
	}
	if len(l) == 0 {
		return nil, ""
	}
	return l, ""
}

// str decodes a string member; scratch is the buffer to decode escapes into.
func str(m *member, scratch *[]byte) ([]byte, bool) {
	if m == nil || m.kind != kString {
		return nil, false
	}
	raw := strContent(m.val)
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw, true
	}
	*scratch = unquote(raw, true, (*scratch)[:0])
	return *scratch, true
}

// validID reports whether b is a bounded upstream identifier: 1-256 bytes of
// visible ASCII.
func validID(b []byte) bool {
	if len(b) == 0 || len(b) > maxIDBytes {
		return false
	}
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}
