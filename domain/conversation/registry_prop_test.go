package conversation_test

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/conversation"
)

// mAnchor is the hand-written model's view of one anchor.
type mAnchor struct {
	state                         conversation.State
	created, expires, claim, tomb time.Time
	claimID                       string
	seq                           int // when it entered its state (for the capacity order)
}

// registryMachine checks conversation.Registry against a model written from
// the rules, not from the rows: recording (superseding, capacity,
// never dropping a claimed anchor), lookups, settlements and time.
type registryMachine struct {
	reg    *conversation.Registry
	limits conversation.Limits
	policy conversation.Policy
	now    time.Time
	model  map[conversation.Key]*mAnchor
	claimN int
	seq    int
	test   string
}

// enter moves a to state s, noting when.
func (m *registryMachine) enter(a *mAnchor, s conversation.State) {
	m.seq++
	a.state, a.seq = s, m.seq
}

var keys = func() []conversation.Key {
	var ks []conversation.Key
	for _, p := range []string{"p1", "p2"} {
		for _, h := range []string{"h1", "h2", "h3"} {
			ks = append(ks, conversation.Key{PrincipalID: p, TranscriptHash: h})
		}
	}
	return ks
}()

func (m *registryMachine) rec(d conversation.Decision) { record(m.test, d) }

// due applies time to one model anchor; it returns false when the anchor is
// gone.
func (m *registryMachine) due(k conversation.Key) (via string, alive bool) {
	a := m.model[k]
	switch {
	case a.state == conversation.Active && !m.now.Before(a.expires):
		m.enter(a, conversation.Expired)
		a.tomb = m.now.Add(m.policy.TerminalTTL)
		return "A05", true
	case (a.state == conversation.Claimed || a.state == conversation.Resuming) && !m.now.Before(a.claim):
		row := map[conversation.State]string{conversation.Claimed: "A11", conversation.Resuming: "A32"}[a.state]
		m.enter(a, conversation.Resumable)
		a.tomb = m.now.Add(m.policy.TerminalTTL)
		return row, true
	case a.state.Terminal() && !m.now.Before(a.tomb):
		delete(m.model, k)
		return map[conversation.State]string{conversation.Advanced: "A14", conversation.Retired: "A17", conversation.Expired: "A20",
			conversation.Resumable: "A25"}[a.state], false
	}
	return "", true
}

func (m *registryMachine) Record(t *rapid.T) {
	k := rapid.SampledFrom(keys).Draw(t, "key")
	a := conversation.Anchor{PrincipalID: k.PrincipalID, WorkspaceID: "ws", Model: "m", ToolsHash: "tools",
		TranscriptHash: k.TranscriptHash, ConversationID: "conv", State: conversation.Active, CreatedAt: m.now,
		ExpiresAt: m.now.Add(m.policy.TTL)}
	ds, err := m.reg.Record(a, m.now)
	for _, d := range ds {
		m.rec(d)
	}
	var wantErr error
	if old, ok := m.model[k]; ok {
		if claimedState(old.state) {
			wantErr = conversation.ErrBusy
		} else {
			delete(m.model, k)
		}
	}
	for wantErr == nil && len(m.model) >= m.limits.MaxAnchors {
		v, ok := m.victim(k.PrincipalID)
		if !ok {
			wantErr = conversation.ErrFull
			break
		}
		delete(m.model, v)
	}
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			t.Fatalf("record %v: got %v vs expected %v", k, err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("record %v: %v", k, err)
	}
	a2 := &mAnchor{created: m.now, expires: m.now.Add(m.policy.TTL)}
	m.enter(a2, conversation.Active)
	m.model[k] = a2
}

// victim: among the principals holding droppable anchors (tombstones,
// ACTIVE), the one holding the most — the recorder p on a tie, else the
// smallest id — and of its anchors the one that became a tombstone first,
// else the one that became ACTIVE first; never a claimed one.
func (m *registryMachine) victim(p string) (conversation.Key, bool) {
	held := map[string]int{}
	for k, a := range m.model {
		if !claimedState(a.state) {
			held[k.PrincipalID]++
		}
	}
	owner, most := "", 0
	for id, n := range held {
		if n > most || n == most && (id == p || owner != p && id < owner) {
			owner, most = id, n
		}
	}
	if most == 0 {
		return conversation.Key{}, false
	}
	for _, want := range []func(conversation.State) bool{conversation.State.Terminal, func(s conversation.State) bool { return s == conversation.Active }} {
		var best *conversation.Key
		for k, a := range m.model {
			if k.PrincipalID == owner && want(a.state) && (best == nil || a.seq < m.model[*best].seq) {
				kk := k
				best = &kk
			}
		}
		if best != nil {
			return *best, true
		}
	}
	return conversation.Key{}, false
}

// claimedState: a request holds the anchor (never dropped, never superseded).
func claimedState(s conversation.State) bool {
	return s == conversation.Claimed || s == conversation.Resuming
}

func sortedKeys(mm map[conversation.Key]*mAnchor) []conversation.Key {
	ks := make([]conversation.Key, 0, len(mm))
	for k := range mm {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].PrincipalID != ks[j].PrincipalID {
			return ks[i].PrincipalID < ks[j].PrincipalID
		}
		return ks[i].TranscriptHash < ks[j].TranscriptHash
	})
	return ks
}

func (m *registryMachine) Claim(t *rapid.T) {
	k := rapid.SampledFrom(keys).Draw(t, "key")
	r := req
	switch rapid.SampledFrom([]string{"same", "same", "same", "model", "tools", "workspace", "instructions"}).Draw(t, "variant") {
	case "model":
		r.Model = "other"
	case "tools":
		r.ToolsHash = "other"
	case "workspace":
		r.WorkspaceID = "other"
	case "instructions":
		r.InstructionsHash = "other"
	}
	m.claimN++
	id := fmt.Sprintf("claim-%d", m.claimN)
	d, err := m.reg.Update(k, func(a *conversation.Anchor) (conversation.Decision, error) {
		return a.Claim(m.now, m.policy, r, id)
	})
	if errors.Is(err, conversation.ErrNoAnchor) {
		d, err = conversation.LookupMissing(), nil
	}
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	m.rec(d)

	wantVia, wantRow, wantReason := "", "A22", conversation.ReasonHistoryChanged
	if _, ok := m.model[k]; ok {
		var alive bool
		wantVia, alive = m.due(k)
		if alive {
			a := m.model[k]
			switch a.state {
			case conversation.Active:
				switch {
				case r.WorkspaceID != req.WorkspaceID:
					wantRow, wantReason = "A04", conversation.ReasonWorkspaceChanged
				case r.Model != req.Model:
					wantRow, wantReason = "A02", conversation.ReasonModelChanged
				case r.InstructionsHash != req.InstructionsHash:
					wantRow, wantReason = "A36", conversation.ReasonInstructionsChanged
				case r.ToolsHash != req.ToolsHash:
					wantRow, wantReason = "A03", conversation.ReasonToolsChanged
				default:
					wantRow, wantReason = "A01", ""
					m.enter(a, conversation.Claimed)
					a.claimID, a.claim = id, m.now.Add(m.policy.ClaimTTL)
				}
			case conversation.Claimed:
				wantRow, wantReason = "A07", conversation.ReasonRaced
			case conversation.Resuming:
				wantRow, wantReason = "A28", conversation.ReasonRaced
			case conversation.Resumable:
				wantRow, wantReason = "A23", conversation.ReasonAfterFailure
			case conversation.Advanced:
				wantRow, wantReason = "A13", conversation.ReasonAlreadyContinued
			case conversation.Retired:
				wantRow, wantReason = "A16", conversation.ReasonRetired
			case conversation.Expired:
				wantRow, wantReason = "A19", conversation.ReasonExpired
			}
		}
	}
	if d.Via != wantVia || d.Row != wantRow || d.Reason != wantReason {
		t.Fatalf("claim %v: got via %q row %s reason %q vs expected via %q row %s reason %q", k, d.Via, d.Row, d.Reason, wantVia, wantRow, wantReason)
	}
	if got, ok := m.reg.Get(k); ok && claimedState(got.State) && got.ClaimID != m.model[k].claimID {
		t.Fatalf("claim id: got %q vs expected %q", got.ClaimID, m.model[k].claimID)
	}
}

func (m *registryMachine) Settle(t *rapid.T) {
	var claimed []conversation.Key
	for _, k := range sortedKeys(m.model) {
		if claimedState(m.model[k].state) {
			claimed = append(claimed, k)
		}
	}
	if len(claimed) == 0 {
		t.Skip("no claimed anchor")
	}
	k := rapid.SampledFrom(claimed).Draw(t, "claimed")
	how := rapid.SampledFrom([]string{"complete", "notsent", "retire", "lost"}).Draw(t, "outcome")
	stale := rapid.IntRange(0, 9).Draw(t, "stale") == 0
	a := m.model[k]
	id := a.claimID
	if stale {
		id = "someone-else"
	}
	ev := map[string]conversation.Event{"complete": conversation.Complete, "notsent": conversation.NotSent, "lost": conversation.Lost}[how]
	if ev == "" {
		ev = conversation.Ambiguous
	}
	d, err := m.reg.Update(k, func(an *conversation.Anchor) (conversation.Decision, error) {
		return an.Settle(ev, id, m.now, m.policy)
	})
	if stale {
		if !errors.Is(err, conversation.ErrStaleClaim) {
			t.Fatalf("stale settle: got %v", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("settle: %v", err)
	}
	m.rec(d)
	switch {
	case how == "complete":
		m.enter(a, conversation.Advanced)
		a.tomb = m.now.Add(m.policy.TerminalTTL)
	case how == "notsent" && a.state == conversation.Claimed:
		m.enter(a, conversation.Active)
		a.claimID = ""
	case how == "lost":
		m.enter(a, conversation.Retired)
		a.tomb = m.now.Add(m.policy.TerminalTTL)
	default: // a resumed claim not sent, or any claim whose outcome is unknown
		m.enter(a, conversation.Resumable)
		a.tomb = m.now.Add(m.policy.TerminalTTL)
	}
	if d.To != a.state {
		t.Fatalf("settle %s: got %s vs expected %s", how, d.To, a.state)
	}
}

// Resume claims a RESUMABLE or ADVANCED anchor for a turn whose transcript
// does not fit a fresh query; every other state refuses it.
func (m *registryMachine) Resume(t *rapid.T) {
	k := rapid.SampledFrom(keys).Draw(t, "key")
	m.claimN++
	id := fmt.Sprintf("claim-%d", m.claimN)
	d, err := m.reg.Update(k, func(a *conversation.Anchor) (conversation.Decision, error) {
		return a.Resume(m.now, m.policy, id, conversation.Sent{})
	})
	if _, ok := m.model[k]; !ok {
		if !errors.Is(err, conversation.ErrNoAnchor) {
			t.Fatalf("resume of a missing anchor: got %v", err)
		}
		return
	}
	// Time is applied first, inside the update: when the resume is then
	// refused, nothing is written (not even the time row).
	saved := *m.model[k]
	_, alive := m.due(k)
	a, ok := m.model[k]
	row := ""
	if alive && ok {
		row = map[conversation.State]string{conversation.Resumable: "A24", conversation.Advanced: "A27"}[a.state]
	}
	if row == "" {
		if !errors.Is(err, conversation.ErrIllegalTransition) {
			t.Fatalf("resume: got %v", err)
		}
		m.model[k] = &saved
		return
	}
	if err != nil || d.Row != row {
		t.Fatalf("resume in %s: got %s %v vs expected %s", a.state, d.Row, err, row)
	}
	m.rec(d)
	m.enter(a, conversation.Resuming)
	a.claimID, a.claim = id, m.now.Add(m.policy.ClaimTTL)
}

// ContinueChanged claims an ACTIVE anchor for a turn too long to start fresh
// that changed only the instructions or the tools (an agent's compaction);
// every other state, and a changed model or workspace or nothing changed,
// refuses it.
func (m *registryMachine) ContinueChanged(t *rapid.T) {
	k := rapid.SampledFrom(keys).Draw(t, "key")
	r := req
	variant := rapid.SampledFrom([]string{"instructions", "tools", "both", "model", "none"}).Draw(t, "variant")
	switch variant {
	case "instructions":
		r.InstructionsHash = "other"
	case "tools":
		r.ToolsHash = "other"
	case "both":
		r.InstructionsHash, r.ToolsHash = "other", "other"
	case "model":
		r.Model, r.ToolsHash = "other", "other"
	}
	m.claimN++
	id := fmt.Sprintf("claim-%d", m.claimN)
	d, err := m.reg.Update(k, func(a *conversation.Anchor) (conversation.Decision, error) {
		return a.ContinueChanged(m.now, m.policy, r, id)
	})
	if _, ok := m.model[k]; !ok {
		if !errors.Is(err, conversation.ErrNoAnchor) {
			t.Fatalf("continue-changed of a missing anchor: got %v", err)
		}
		return
	}
	saved := *m.model[k]
	_, alive := m.due(k)
	a, ok := m.model[k]
	if !alive || !ok || a.state != conversation.Active || variant == "model" || variant == "none" {
		if !errors.Is(err, conversation.ErrIllegalTransition) {
			t.Fatalf("continue-changed (%s): got %v", variant, err)
		}
		m.model[k] = &saved
		return
	}
	if err != nil || d.Row != "A37" {
		t.Fatalf("continue-changed: got %s %v vs expected A37", d.Row, err)
	}
	m.rec(d)
	m.enter(a, conversation.Claimed)
	a.claimID, a.claim = id, m.now.Add(m.policy.ClaimTTL)
}

func (m *registryMachine) Tick(t *rapid.T) {
	m.now = m.now.Add(time.Duration(rapid.IntRange(0, 1200).Draw(t, "seconds")) * time.Second)
}

func (m *registryMachine) Sweep(t *rapid.T) {
	rep, ds := m.reg.Sweep(m.now)
	for _, d := range ds {
		m.rec(d)
	}
	var want conversation.SweepReport
	rows := map[string]int{}
	for _, k := range sortedKeys(m.model) {
		via, alive := m.due(k)
		switch {
		case !alive:
			want.Removed++
		case via == "A05":
			want.Expired++
		case via == "A11", via == "A32":
			want.Retired++
		}
	}
	for _, d := range ds {
		rows[d.Row]++
	}
	if len(rows) > 0 {
		want.Rows = rows
	}
	if !reflect.DeepEqual(rep, want) {
		t.Fatalf("sweep: got %+v vs expected %+v", rep, want)
	}
}

func (m *registryMachine) Check(t *rapid.T) {
	c := m.reg.Counts()
	want := map[conversation.State]int{}
	for _, a := range m.model {
		want[a.state]++
	}
	if c.Anchors != len(m.model) || len(c.ByState) != len(want) {
		t.Fatalf("counts: got %+v vs expected %v", c, want)
	}
	for s, n := range want {
		if c.ByState[s] != n {
			t.Fatalf("counts of %s: got %d vs expected %d", s, c.ByState[s], n)
		}
	}
	if c.Anchors > m.limits.MaxAnchors {
		t.Fatalf("%d anchors over the limit %d", c.Anchors, m.limits.MaxAnchors)
	}
	bytes := 0
	for k := range m.model {
		got, ok := m.reg.Get(k)
		if !ok || got.State != m.model[k].state {
			t.Fatalf("anchor %v: got %v/%s vs expected %s", k, ok, got.State, m.model[k].state)
		}
		bytes += got.Bytes()
	}
	if c.Bytes != bytes {
		t.Fatalf("bytes: got %d vs expected %d", c.Bytes, bytes)
	}
}

func TestRegistryMatchesTheHandWrittenModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := &registryMachine{
			limits: conversation.Limits{MaxAnchors: rapid.IntRange(1, 5).Draw(rt, "max anchors")},
			policy: conversation.Policy{
				TTL:         time.Duration(rapid.IntRange(1, 1800).Draw(rt, "ttl s")) * time.Second,
				ClaimTTL:    time.Duration(rapid.IntRange(1, 600).Draw(rt, "claim ttl s")) * time.Second,
				TerminalTTL: time.Duration(rapid.IntRange(1, 1800).Draw(rt, "terminal ttl s")) * time.Second,
			},
			now:   t0,
			model: map[conversation.Key]*mAnchor{},
			test:  t.Name(),
		}
		m.reg = conversation.NewRegistry(m.limits, m.policy)
		rt.Repeat(rapid.StateMachineActions(m))
	})
}
