package postman

import (
	"bytes"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
)

// This file finds the conversation id, wherever an event carries it.

// conversationIn reads the conversation id from every place the public
// projects look for it, on any event: conversationId, conversation_id and
// metadata.conversationId of the event; conversationId, conversation_id,
// metadata.conversationId, conversation.id and conversation.conversationId of
// its data; and, on a conversation event, data.id. Every id present must be a
// bounded identifier, and all must agree with each other and with the id the
// stream already has (a continuation starts with the stored one): two
// different ids in one stream are an unverified shape. A new id is emitted as
// an EventConversation, before the event's own output. found reports whether
// the event named a conversation.
func (d *decoder) conversationIn(dataObject bool) (found bool, code errs.Code) {
	d.convSeen = false
	defer func() { d.metaSpan = nil }()
	if code = d.convKeys(d.top, convIDKeys[:]); code != "" {
		return false, code
	}
	if code = d.convNested(d.top, "metadata", convMetaKeys[:]); code != "" {
		return false, code
	}
	if dataObject {
		if code = d.convKeys(d.data, convIDKeys[:]); code != "" {
			return false, code
		}
		if d.lastType == evConversation {
			if code = d.convKeys(d.data, convObjectKeys[:1]); code != "" {
				return false, code
			}
		}
		if code = d.convNested(d.data, "metadata", convMetaKeys[:]); code != "" {
			return false, code
		}
		if code = d.convNested(d.data, "conversation", convObjectKeys[:]); code != "" {
			return false, code
		}
	}
	if !d.convSeen {
		return false, ""
	}
	if d.convID != "" {
		if string(d.cbuf) != d.convID {
			return true, errs.UpstreamUnverifiedEventShape // a second, different conversation
		}
		return true, ""
	}
	d.convID = string(d.cbuf)
	d.push(chat.Event{Kind: chat.EventConversation, ConversationID: d.convID})
	return true, ""
}

// Where conversation ids are read (see conversationIn).
var (
	convIDKeys     = [...]string{"conversationId", "conversation_id"}
	convMetaKeys   = [...]string{"conversationId"}
	convObjectKeys = [...]string{"id", "conversationId"}
)

// convKeys takes the conversation id of each key of ms that is present.
func (d *decoder) convKeys(ms []member, keys []string) errs.Code {
	for _, k := range keys {
		m, err := d.get(ms, k)
		if err != nil {
			return errs.UpstreamUnverifiedEventShape
		}
		if c := d.convTake(m); c != "" {
			return c
		}
	}
	return ""
}

// convNested takes the conversation ids of keys inside the object member name
// of ms; a member that is not an object is left to the other checks.
func (d *decoder) convNested(ms []member, name string, keys []string) errs.Code {
	m, err := d.get(ms, name)
	if err != nil {
		return errs.UpstreamUnverifiedEventShape
	}
	if m == nil || m.kind != kObject {
		return ""
	}
	if sameSpan(m.val, d.metaSpan) {
		return d.convKeys(d.meta, keys) // the label check parsed this object already
	}
	if d.cmeta, err = parseObjectSpan(m.val, d.cmeta); err != nil {
		return errs.UpstreamMalformedEvent
	}
	return d.convKeys(d.cmeta, keys)
}

// sameSpan reports whether a and b are the same bytes of the same line.
func sameSpan(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
}

// convTake records one conversation id of the current event: it must be a
// bounded identifier and equal every other id of the event.
func (d *decoder) convTake(m *member) errs.Code {
	if m == nil || m.kind == kNull {
		return ""
	}
	id, ok := str(m, &d.sbuf)
	if !ok || !validID(id) {
		return errs.UpstreamUnverifiedEventShape
	}
	if !d.convSeen {
		d.cbuf = append(d.cbuf[:0], id...)
		d.convSeen = true
		return ""
	}
	if !bytes.Equal(d.cbuf, id) {
		return errs.UpstreamUnverifiedEventShape // two different ids in one event
	}
	return ""
}
