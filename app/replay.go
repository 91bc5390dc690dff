package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/structured"
)

// The answer of a consumed tool group is cached in the correlation store so
// that the same results submitted again get the same answer without a second
// dispatch. The store keeps the bytes opaque; their format is owned here and
// is independent of the in-memory Delta, so a change of Delta cannot silently
// change what earlier instances wrote or read.
//
// Version 1 (written by this build) is an object with a version and the
// deltas, every field named by a JSON tag:
//
//	{"v":1,"deltas":[{"text":"…"},{"tool_call":{"index":0,"id":"call_…","name":"f","arguments":"{…"}},
//	                 {"finish":"tool_calls","usage":{"prompt_tokens":3}}]}
//
// Version 0 is what releases before it wrote: a bare JSON array of the untagged
// Go structs ([{"Text":"…","ToolCall":null,"Finish":"","Usage":null},…]). Such
// bytes may still sit in a shared PostgreSQL store after an upgrade, so they
// are read as they are. Any other version was written by a newer release
// during a rolling deploy: it is refused with replay_format_unsupported (a
// retry on an upgraded instance can replay it), never mistaken for a record
// without a cached answer. Any change of the format, an added field included,
// takes a new version: a v1 record with a member this build does not know is
// not a v1 record. Bytes that are no record at all are answered as a consumed
// group without a cached answer (tool_call_already_consumed), as before.
const replayVersion = 1

type replayRecordV1 struct {
	V      int             `json:"v"`
	Deltas []replayDeltaV1 `json:"deltas"`
}

type replayDeltaV1 struct {
	Text     string            `json:"text,omitempty"`
	ToolCall *replayToolCallV1 `json:"tool_call,omitempty"`
	Finish   FinishReason      `json:"finish,omitempty"`
	Usage    *replayUsageV1    `json:"usage,omitempty"`
}

type replayToolCallV1 struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

type replayUsageV1 struct {
	PromptTokens     *int64 `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64 `json:"completion_tokens,omitempty"`
	TotalTokens      *int64 `json:"total_tokens,omitempty"`
}

// replayDeltaV0 is the untagged layout of releases before version 1, frozen:
// the Go field names are the JSON member names.
type replayDeltaV0 struct {
	Text     string
	ToolCall *replayToolCallV0
	Finish   FinishReason
	Usage    *replayUsageV0
}

type replayToolCallV0 struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

type replayUsageV0 struct {
	PromptTokens     *int64
	CompletionTokens *int64
	TotalTokens      *int64
}

// The stored layouts are converted to and from Delta by Go conversions, which
// compile only while the fields agree (tags aside): a change of Delta breaks
// the build here instead of silently changing a stored format.

// encodeReplay is the cached form (the current version) of a turn's deltas.
func encodeReplay(ds []Delta) ([]byte, error) {
	rec := replayRecordV1{V: replayVersion, Deltas: make([]replayDeltaV1, len(ds))}
	for i, d := range ds {
		rec.Deltas[i] = replayDeltaV1{Text: d.Text, ToolCall: (*replayToolCallV1)(d.ToolCall), Finish: d.Finish, Usage: (*replayUsageV1)(d.Usage)}
	}
	return json.Marshal(rec)
}

// decodeReplay reads cached bytes of any version this build knows.
func decodeReplay(cached []byte) ([]Delta, error) {
	b := bytes.TrimLeft(cached, " \t\r\n")
	var rs []replayDeltaV1
	ok := false
	switch {
	case len(b) > 0 && b[0] == '[':
		var v0 []replayDeltaV0
		if ok = json.Unmarshal(b, &v0) == nil; ok {
			for _, r := range v0 {
				rs = append(rs, replayDeltaV1{Text: r.Text, ToolCall: (*replayToolCallV1)(r.ToolCall), Finish: r.Finish, Usage: (*replayUsageV1)(r.Usage)})
			}
		}
	case len(b) > 0 && b[0] == '{':
		var head struct {
			V *int `json:"v"`
		}
		if json.Unmarshal(b, &head) != nil || head.V == nil {
			break
		}
		if *head.V != replayVersion {
			return nil, errs.Newf(errs.ReplayFormatUnsupported, "cached answer format version %d, this build reads 0 and %d", *head.V, replayVersion)
		}
		var rec replayRecordV1
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		ok = dec.Decode(&rec) == nil && !dec.More()
		rs = rec.Deltas
	}
	if !ok || len(rs) == 0 || rs[len(rs)-1].Finish == "" {
		return nil, errs.New(errs.ToolCallAlreadyConsumed)
	}
	ds := make([]Delta, len(rs))
	for i, r := range rs {
		ds[i] = Delta{Text: r.Text, ToolCall: (*ToolCallDelta)(r.ToolCall), Finish: r.Finish, Usage: (*chat.Usage)(r.Usage)}
	}
	return ds, nil
}

// replayTurn returns the cached deltas of a consumed group, held to the
// response format of the request that replays them (checkReplay).
func replayTurn(cached []byte, f chat.OutputFormat) (Turn, error) {
	ds, err := decodeReplay(cached)
	if err != nil {
		return nil, err
	}
	if ds, err = checkReplay(f, ds); err != nil {
		return nil, err
	}
	return &sliceTurn{deltas: ds}, nil
}

// checkReplay holds a cached answer to the replaying request's format as a
// fresh answer is held (turn.structuredText). The answer was checked, if at
// all, against the format of the request that dispatched the results, and the
// format is no part of what a replay must repeat: a replay asking for
// json_schema may find prose cached, or another schema's answer. A cached turn
// that ended in tool calls has no answer to check and is replayed as it is;
// the text of one that ended with an answer must pass structured.Check and is
// then released as one delta holding exactly the JSON text; one that fails is
// refused with upstream_output_invalid and nothing of it is shown.
func checkReplay(f chat.OutputFormat, ds []Delta) ([]Delta, error) {
	if !f.Structured() {
		return ds, nil
	}
	var text strings.Builder
	rest := make([]Delta, 0, 1)
	for _, d := range ds {
		if d.ToolCall != nil || d.Finish == FinishToolCalls {
			return ds, nil
		}
		text.WriteString(d.Text)
		if d.Finish != "" || d.Usage != nil {
			d.Text = ""
			rest = append(rest, d)
		}
	}
	answer, err := structured.Check(f, text.String())
	if err != nil {
		return nil, err
	}
	return append([]Delta{{Text: answer}}, rest...), nil
}

type sliceTurn struct{ deltas []Delta }

// disclosedReplay is a recorded answer replayed to a request whose
// transcript before the calls differs from the one they were issued in:
// disclosed as the answer was when it was dispatched.
type disclosedReplay struct {
	Turn
	disclosure string
}

// Disclosure implements Disclosed.
func (t disclosedReplay) Disclosure() string { return t.disclosure }

func (s *sliceTurn) Next(context.Context) (Delta, error) {
	if len(s.deltas) == 0 {
		return Delta{}, io.EOF
	}
	d := s.deltas[0]
	s.deltas = s.deltas[1:]
	return d, nil
}

func (s *sliceTurn) Close() {}
