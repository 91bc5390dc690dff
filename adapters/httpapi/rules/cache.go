package rules

import (
	"sync"

	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// An agent sends the same tool definitions on every turn; decoding them
// lowers every schema (parsing and rebuilding it: hundreds of allocations)
// and walks every object. Both are pure functions of their inputs, so the
// results are remembered, keyed by all of those inputs exactly (the bytes as
// sent plus every option), and a hit returns what the function would.
// Refusals are not kept. Both caches are safe for concurrent use.

// MemoEntries and MemoBytes bound each cache; when either is exceeded it
// starts over empty. An input larger than maxMemoInput is never kept.
const (
	MemoEntries  = 1024
	MemoBytes    = 16 << 20
	maxMemoInput = 1 << 20
)

// Memo maps exact input bytes plus a comparable variant (the options) to a
// value that is never written after it is stored.
type Memo[O comparable, V any] struct {
	sync.Mutex
	byRaw   map[string][]memoEntry[O, V]
	entries int
	bytes   int
}

type memoEntry[O comparable, V any] struct {
	opts O
	v    V
}

// Get is the value kept for (raw, opts).
func (m *Memo[O, V]) Get(raw []byte, opts O) (V, bool) {
	m.Lock()
	defer m.Unlock()
	for _, e := range m.byRaw[string(raw)] { // no copy of raw for the lookup
		if e.opts == opts {
			return e.v, true
		}
	}
	var zero V
	return zero, false
}

// Put keeps v for (raw, opts); size is what v and opts hold beyond raw.
func (m *Memo[O, V]) Put(raw []byte, opts O, v V, size int) {
	if len(raw) > maxMemoInput {
		return
	}
	m.Lock()
	defer m.Unlock()
	if m.byRaw == nil || m.entries >= MemoEntries || m.bytes+len(raw)+size > MemoBytes {
		m.byRaw, m.entries, m.bytes = map[string][]memoEntry[O, V]{}, 0, 0
	}
	k := string(raw)
	m.byRaw[k] = append(m.byRaw[k], memoEntry[O, V]{opts: opts, v: v})
	m.entries++
	m.bytes += len(raw) + size
}

type lowerKey struct {
	path string
	opts toolschema.Options
}

var lowerings Memo[lowerKey, []byte]

// LowerSchema is toolschema.Lower(raw, path, opts), remembered.
func LowerSchema(raw []byte, path string, opts toolschema.Options) ([]byte, error) {
	k := lowerKey{path: path, opts: opts}
	if out, ok := lowerings.Get(raw, k); ok {
		return out, nil
	}
	out, err := toolschema.Lower(raw, path, opts)
	if err != nil {
		return nil, err
	}
	out = append([]byte(nil), out...) // Lower may return raw itself, which is the request's memory
	lowerings.Put(raw, k, out, len(out)+len(path))
	return out, nil
}

// ToolsKey is every setting decodeTools depends on besides the bytes.
type ToolsKey struct {
	api      string // whose tool shape the bytes are (chat's when empty)
	maxTools int
	opts     toolschema.Options
}

var decodedTools Memo[ToolsKey, []chat.Tool]

// ToolsSize is what a decoded tool set holds beyond the bytes it came from.
func ToolsSize(tools []chat.Tool) int {
	n := 0
	for _, t := range tools {
		n += 64 + len(t.Name) + len(t.Description) + len(t.Parameters) + len(t.UpstreamParameters)
	}
	return n
}

// Size is what the memo holds: its entries and the bytes they count.
func (m *Memo[O, V]) Size() (entries, bytes int) {
	m.Lock()
	defer m.Unlock()
	return m.entries, m.bytes
}
