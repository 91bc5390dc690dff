package httpapi

import (
	"sync"

	"github.com/pmgate/pmgate/domain/toolschema"
)

// An agent sends the same tool schemas on every turn; lowering one parses
// and rebuilds it (hundreds of allocations). lowerSchema keeps the lowered
// form of the schemas it has lowered: toolschema.Lower is a pure function of
// its inputs, and the cache is keyed by all of them exactly (the schema's
// bytes, the parameter path, the options), so a hit returns what Lower would.
// Refusals are not kept. It is safe for concurrent use.

// lowerCacheEntries and lowerCacheBytes bound the cache; when either is
// exceeded it starts over empty. A schema larger than maxCachedSchema is
// lowered every time.
const (
	lowerCacheEntries = 1024
	lowerCacheBytes   = 16 << 20
	maxCachedSchema   = 256 << 10
)

type loweredSchema struct {
	path string
	opts toolschema.Options
	out  []byte // never written after it is stored; shared by the requests that hit it
}

var lowerings = struct {
	sync.Mutex
	byRaw   map[string][]loweredSchema // by the schema's exact bytes
	entries int
	bytes   int
}{byRaw: map[string][]loweredSchema{}}

// lowerSchema is toolschema.Lower(raw, path, opts), remembered.
func lowerSchema(raw []byte, path string, opts toolschema.Options) ([]byte, error) {
	if len(raw) > maxCachedSchema {
		return toolschema.Lower(raw, path, opts)
	}
	lowerings.Lock()
	for _, e := range lowerings.byRaw[string(raw)] {
		if e.path == path && e.opts == opts {
			lowerings.Unlock()
			return e.out, nil
		}
	}
	lowerings.Unlock()
	out, err := toolschema.Lower(raw, path, opts)
	if err != nil {
		return nil, err
	}
	out = append([]byte(nil), out...) // Lower may return raw itself, which is the request's memory
	lowerings.Lock()
	defer lowerings.Unlock()
	if lowerings.entries >= lowerCacheEntries || lowerings.bytes+len(raw)+len(out)+len(path) > lowerCacheBytes {
		lowerings.byRaw, lowerings.entries, lowerings.bytes = map[string][]loweredSchema{}, 0, 0
	}
	k := string(raw)
	lowerings.byRaw[k] = append(lowerings.byRaw[k], loweredSchema{path: path, opts: opts, out: out})
	lowerings.entries++
	lowerings.bytes += len(raw) + len(out) + len(path)
	return out, nil
}
