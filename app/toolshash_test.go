package app

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/matryer/is"
	"pgregory.net/rapid"

	"github.com/pmgate/pmgate/domain/canon"
	"github.com/pmgate/pmgate/domain/chat"
)

func boolPtr(b bool) *bool { return &b }

func weatherTool() chat.Tool {
	return chat.Tool{Name: "get_weather", Description: "Weather for a city",
		Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string","default":"Paris"}}}`)}
}

// Two definition sets that differ in any field, or only in where one field
// ends and the next begins, never share an entry.
func TestToolsCacheNeverSharesAnEntryBetweenDifferentSets(t *testing.T) {
	is := is.New(t)
	base := weatherTool()
	variants := map[string]chat.Request{"base": {Tools: []chat.Tool{base}}}
	add := func(name string, api string, f func(*chat.Tool)) {
		tool := base
		f(&tool)
		variants[name] = chat.Request{API: api, Tools: []chat.Tool{tool}}
	}
	add("api", "responses", func(*chat.Tool) {})
	add("name", "", func(t *chat.Tool) { t.Name = "get_weathe" })
	add("boundary", "", func(t *chat.Tool) { t.Name, t.Description = "get_weathe", "r"+t.Description })
	add("description", "", func(t *chat.Tool) { t.Description += "." })
	add("parameters", "", func(t *chat.Tool) { t.Parameters = []byte(`{"type":"object"}`) })
	add("spacing", "", func(t *chat.Tool) { t.Parameters = append([]byte(" "), t.Parameters...) })
	add("upstream", "", func(t *chat.Tool) { t.UpstreamParameters = t.Parameters })
	add("swapped", "", func(t *chat.Tool) { t.Parameters, t.UpstreamParameters = nil, t.Parameters })
	add("strict false", "", func(t *chat.Tool) { t.Strict = boolPtr(false) })
	add("strict true", "", func(t *chat.Tool) { t.Strict = boolPtr(true) })
	variants["two"] = chat.Request{Tools: []chat.Tool{base, base}}
	variants["none"] = chat.Request{}

	c := newToolsCache()
	seen := map[*toolSet]string{}
	for name, req := range variants {
		s := c.of(req)
		if other, ok := seen[s]; ok {
			t.Fatalf("%s and %s share an entry", name, other)
		}
		seen[s] = name
		is.True(c.of(req) == s) // the same set finds its entry again
		// A copy with equal bytes in new memory is the same set.
		cp := req
		cp.Tools = nil
		for _, tool := range req.Tools {
			tool.Parameters = append([]byte(nil), tool.Parameters...)
			tool.Name = strings.Clone(tool.Name)
			cp.Tools = append(cp.Tools, tool)
		}
		if len(req.Tools) > 0 {
			is.True(c.of(cp) == s)
		}
	}
	is.Equal(c.len(), len(variants))
}

// The key is injective: equal keys only for requests whose API and tool
// fields are all equal.
func TestToolsKeyIsInjective(t *testing.T) {
	str := rapid.SampledFrom([]string{"", "a", "b", "ab", "\x00", "\x01a"})
	tool := rapid.Custom(func(t *rapid.T) chat.Tool {
		tl := chat.Tool{Name: str.Draw(t, "name"), Description: str.Draw(t, "description")}
		if p := str.Draw(t, "parameters"); p != "" {
			tl.Parameters = []byte(p)
		}
		if p := str.Draw(t, "upstream"); p != "" {
			tl.UpstreamParameters = []byte(p)
		}
		switch rapid.IntRange(0, 2).Draw(t, "strict") {
		case 1:
			tl.Strict = boolPtr(false)
		case 2:
			tl.Strict = boolPtr(true)
		}
		return tl
	})
	rapid.Check(t, func(t *rapid.T) {
		apiA, apiB := str.Draw(t, "apiA"), str.Draw(t, "apiB")
		a := rapid.SliceOfN(tool, 0, 3).Draw(t, "a")
		b := rapid.SliceOfN(tool, 0, 3).Draw(t, "b")
		same := apiA == apiB && reflect.DeepEqual(a, b)
		if len(a) == 0 && len(b) == 0 {
			same = apiA == apiB
		}
		keysEqual := string(appendToolsKey(nil, apiA, a)) == string(appendToolsKey(nil, apiB, b))
		if keysEqual != same {
			t.Fatalf("keys equal %v, sets equal %v: %q %#v / %q %#v", keysEqual, same, apiA, a, apiB, b)
		}
	})
}

// What a set caches is what the uncached functions compute for it.
func TestToolSetValuesAreTheUncachedOnes(t *testing.T) {
	is := is.New(t)
	c := newToolsCache()
	lowered := weatherTool()
	lowered.UpstreamParameters = []byte(`{"type":"object","properties":{"city":{"type":"string"}}}`)
	req := chat.Request{Tools: []chat.Tool{lowered, {Name: "noop", Description: "nothing"}}}
	other := chat.Request{Tools: []chat.Tool{{Name: "noop", Description: "nothing"}}}
	for range 2 {
		for _, r := range []chat.Request{req, other} {
			got, err := c.of(r).toolsBinding(r)
			is.NoErr(err)
			want, err := canon.ToolsBinding(r.API, r.Tools)
			is.NoErr(err)
			is.Equal(got, want)
			d, err := c.of(r).toolDefaults(r)
			is.NoErr(err)
			wd, err := canon.ToolDefaults(r.Tools)
			is.NoErr(err)
			is.Equal(len(d), len(wd))
		}
	}
	schemas, hashes, hashErrs, err := c.of(req).admission(req)
	is.NoErr(err)
	is.Equal(len(schemas), 2)
	is.True(schemas[0].Validate(`{"city":1}`) != nil) // the lowered schema, compiled
	for i, tool := range req.Tools {
		want, werr := canon.SchemaHash(tool.Parameters)
		is.Equal(hashes[i], want)
		is.Equal(hashErrs[i], werr)
	}
	is.NoErr(schemas[1].Validate(`{}`))
	// A schema that was never lowered is refused, and stays refused.
	bad := chat.Request{Tools: []chat.Tool{{Name: "x", Parameters: []byte(`{"type":"object"}`), UpstreamParameters: nil}}}
	bad.Tools[0].UpstreamParameters = []byte(" ")
	for range 2 {
		_, _, _, err = c.of(bad).admission(bad)
		is.True(err != nil)
	}
}

// The cache holds at most toolsCacheEntries sets and toolsCacheBytes of keys;
// a set whose key exceeds maxCachedToolsKey is never cached.
func TestToolsCacheIsBounded(t *testing.T) {
	is := is.New(t)
	c := newToolsCache()
	req := func(i int, desc string) chat.Request {
		return chat.Request{Tools: []chat.Tool{{Name: fmt.Sprintf("t%d", i), Description: desc}}}
	}
	for i := range 3 * toolsCacheEntries {
		c.of(req(i, ""))
		is.True(c.len() <= toolsCacheEntries)
	}
	is.Equal(c.len(), toolsCacheEntries)
	last := c.of(req(3*toolsCacheEntries-1, ""))
	is.True(c.of(req(3*toolsCacheEntries-1, "")) == last) // the newest stay
	is.Equal(c.len(), toolsCacheEntries)

	big := strings.Repeat("d", maxCachedToolsKey/2)
	for i := range 3 * toolsCacheBytes / len(big) {
		c.of(req(i, big))
		c.mu.Lock()
		is.True(c.bytes <= toolsCacheBytes)
		c.mu.Unlock()
	}
	n := c.len()
	huge := req(0, strings.Repeat("h", maxCachedToolsKey+1))
	is.True(c.of(huge) != c.of(huge)) // derived per request
	is.Equal(c.len(), n)
}

// The key must encode every field of chat.Tool: a field added there and not
// here would let two different definition sets share one cached toolSet.
func TestToolsKeyCoversEveryToolField(t *testing.T) {
	is := is.New(t)
	tt := reflect.TypeOf(chat.Tool{})
	var names []string
	for i := range tt.NumField() {
		names = append(names, tt.Field(i).Name)
	}
	is.Equal(names, []string{"Name", "Description", "Parameters", "UpstreamParameters", "Strict"}) // update appendToolsKey first
}
