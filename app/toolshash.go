package app

import (
	"encoding/binary"
	"strings"
	"sync"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/errs"
	"github.com/pmgate/pmgate/domain/toolschema"
)

// What depends only on a request's tool definitions (and the API it came
// through) is derived once per distinct definition set, not once per
// request: an agent sends the same tools, often a dozen schemas, on every
// turn, and parsing and hashing them was most of what a turn cost the
// gateway. The cache key is the exact bytes of every field the derived
// values read, so two different definition sets never share an entry.

// toolsCacheEntries and toolsCacheBytes bound the cache: at most this many
// definition sets, whose keys hold at most this many bytes together. A set
// whose key alone is larger than maxCachedToolsKey is derived per request.
const (
	toolsCacheEntries = 256
	toolsCacheBytes   = 16 << 20
	maxCachedToolsKey = 1 << 20
)

// toolSet is what is derived from one definition set. Each part is computed
// on first use, from the tools of the request that needs it (every request
// that reaches the entry has exactly the same definitions), and kept with the
// error it returned: the functions are pure, so an error is as final as a
// value. The entry holds no reference to any request's memory.
type toolSet struct {
	bindingOnce sync.Once
	binding     string // canon.ToolsBinding(api, tools)
	bindingErr  error

	defaultsOnce sync.Once
	defaults     canon.DefaultsByTool // canon.ToolDefaults(tools); read only
	defaultsErr  error

	admitOnce    sync.Once
	lowered      []*toolschema.Schema // toolschema.Compile of each tool's lowered schema, by index
	schemaHashes []string             // canon.SchemaHash of each tool's parameters, by index
	hashErrs     []error              // the error of each SchemaHash (only a called tool's matters)
	admitErr     error
}

// toolsBinding is the tools binding of a group or an anchor: the request's
// tool definitions and the API it came through, not its tool_choice.
func (s *toolSet) toolsBinding(req chat.Request) (string, error) {
	s.bindingOnce.Do(func() { s.binding, s.bindingErr = canon.ToolsBinding(req.API, req.Tools) })
	return s.binding, s.bindingErr
}

// toolDefaults are the schema defaults of the request's tools (the echo rule).
func (s *toolSet) toolDefaults(req chat.Request) (canon.DefaultsByTool, error) {
	s.defaultsOnce.Do(func() { s.defaults, s.defaultsErr = canon.ToolDefaults(req.Tools) })
	return s.defaults, s.defaultsErr
}

// admission returns what admitting a tool group needs of each tool, by
// index: its compiled lowered schema (the contract the upstream's arguments
// must meet) and the hash of its original parameters with that hash's error.
// A tool whose schema was never lowered, or does not compile, is an internal
// error of the whole set.
func (s *toolSet) admission(req chat.Request) (lowered []*toolschema.Schema, hashes []string, hashErrs []error, err error) {
	s.admitOnce.Do(func() { s.lowered, s.schemaHashes, s.hashErrs, s.admitErr = deriveAdmission(req.Tools) })
	return s.lowered, s.schemaHashes, s.hashErrs, s.admitErr
}

func deriveAdmission(tools []chat.Tool) ([]*toolschema.Schema, []string, []error, error) {
	lowered := make([]*toolschema.Schema, len(tools))
	hashes := make([]string, len(tools))
	hashErrs := make([]error, len(tools))
	for i, tool := range tools {
		up, ok := tool.Lowered()
		if !ok {
			return nil, nil, nil, errs.Newf(errs.InternalError, "a tool schema was not lowered")
		}
		sch, err := toolschema.Compile(up)
		if err != nil {
			return nil, nil, nil, errs.Wrap(err, errs.InternalError)
		}
		lowered[i] = sch
		hashes[i], hashErrs[i] = canon.SchemaHash(tool.Parameters)
	}
	return lowered, hashes, hashErrs, nil
}

// legacyToolsHashOf is the tools hash an earlier build stored for a chat
// completions group (tool definitions and tool_choice); "" for other APIs,
// which earlier builds did not serve. Only a record of the older form needs
// it (see continueTurn), so it is computed for those alone and not cached.
func legacyToolsHashOf(req chat.Request) (string, error) {
	if req.API != "" {
		return "", nil
	}
	return canon.ToolsHash(req.Tools, req.ToolChoice)
}

// toolsCache maps the exact key of a definition set to its toolSet. It is
// safe for concurrent use; eviction is oldest first.
type toolsCache struct {
	mu    sync.Mutex
	sets  map[string]*toolSet
	order []string // keys, oldest first
	bytes int      // sum of len(key) over sets
}

func newToolsCache() *toolsCache { return &toolsCache{sets: map[string]*toolSet{}} }

// keyBufs recycles the buffers keys are built in.
var keyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// of returns the toolSet of the request's definitions; the first request
// of a set creates it. A set too large to cache gets a fresh toolSet.
func (c *toolsCache) of(req chat.Request) *toolSet {
	bp := keyBufs.Get().(*[]byte)
	key := appendToolsKey((*bp)[:0], req.API, req.Tools)
	defer func() { *bp = key[:0]; keyBufs.Put(bp) }()
	if len(key) > maxCachedToolsKey {
		return &toolSet{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sets[string(key)]; ok { // no allocation: the lookup does not keep the string
		return s
	}
	k := string(key)
	s := &toolSet{}
	c.sets[k] = s
	c.order = append(c.order, k)
	c.bytes += len(k)
	for len(c.order) > toolsCacheEntries || c.bytes > toolsCacheBytes {
		old := c.order[0]
		c.order[0] = ""
		c.order = c.order[1:]
		c.bytes -= len(old)
		delete(c.sets, old)
	}
	if cap(c.order) > 4*toolsCacheEntries { // the slice only moves forward: re-base it now and then
		c.order = append(make([]string, 0, toolsCacheEntries+1), c.order...)
	}
	return s
}

// len is the number of cached definition sets.
func (c *toolsCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sets)
}

// appendToolsKey appends an injective encoding of the API and of every field
// of every tool, in order: each string or byte field is its length (uvarint)
// then its bytes, Strict is one byte (absent, false, true). Two requests get
// the same key only when every one of those fields is equal byte for byte.
func appendToolsKey(b []byte, api string, tools []chat.Tool) []byte {
	b = binary.AppendUvarint(b, uint64(len(api)))
	b = append(b, api...)
	b = binary.AppendUvarint(b, uint64(len(tools)))
	for _, t := range tools {
		for _, f := range [...]string{t.Name, t.Description} {
			b = binary.AppendUvarint(b, uint64(len(f)))
			b = append(b, f...)
		}
		for _, f := range [...][]byte{t.Parameters, t.UpstreamParameters} {
			b = binary.AppendUvarint(b, uint64(len(f)))
			b = append(b, f...)
		}
		switch {
		case t.Strict == nil:
			b = append(b, 0)
		case !*t.Strict:
			b = append(b, 1)
		default:
			b = append(b, 2)
		}
	}
	return b
}

// publicCallID is the public id of an issued tool call as the request's API
// shows it: the Messages API's are "toolu_" ids like Anthropic's own
// ("toolu_pmn_…"), the others keep "call_pmn_…". The random part is the same
// CSPRNG draw either way.
func publicCallID(api, id string) string {
	if api == "messages" {
		return "toolu_" + strings.TrimPrefix(id, "call_")
	}
	return id
}
