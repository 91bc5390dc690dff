package postman_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/postman"
	"github.com/pmgate/pmgate/domain/chat"
	"github.com/pmgate/pmgate/domain/completion"
	"github.com/pmgate/pmgate/domain/errs"
)

var update = flag.Bool("update", false, "rewrite the expected parts of the golden files in testdata")

// goldenStream is one file of testdata/streams: the configuration, the raw SSE
// input (lines joined by "\n", or "\r\n" with crlf; or base64 bytes) and the
// expected decoding.
type goldenStream struct {
	Rule        string        `json:"rule"`
	Tools       []string      `json:"tools,omitempty"`
	Observed    []string      `json:"observed"`
	CRLF        bool          `json:"crlf,omitempty"`
	Input       []string      `json:"input,omitempty"`
	InputBase64 string        `json:"input_base64,omitempty"`
	Expected    *goldenResult `json:"expected,omitempty"`
}

type goldenEvent struct {
	Kind             string `json:"kind"`
	Text             string `json:"text,omitempty"`
	ConversationID   string `json:"conversation_id,omitempty"`
	Index            *int   `json:"index,omitempty"`
	UpstreamID       string `json:"upstream_id,omitempty"`
	UpstreamGroupID  string `json:"upstream_group_id,omitempty"`
	Name             string `json:"name,omitempty"`
	Arguments        string `json:"arguments,omitempty"`
	PromptTokens     *int64 `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64 `json:"completion_tokens,omitempty"`
	TotalTokens      *int64 `json:"total_tokens,omitempty"`
}

type goldenCall struct {
	Index           int    `json:"index"`
	UpstreamID      string `json:"upstream_id"`
	UpstreamGroupID string `json:"upstream_group_id,omitempty"`
	Synthetic       bool   `json:"synthetic,omitempty"`
	Name            string `json:"name"`
	Arguments       string `json:"arguments"`
}

type goldenResult struct {
	Events         []goldenEvent `json:"events"`
	End            string        `json:"end"` // "EOF" or the stable code
	State          string        `json:"state"`
	ConversationID string        `json:"conversation_id,omitempty"`
	ModelObserved  *string       `json:"model_observed"`
	ToolCalls      []goldenCall  `json:"tool_calls,omitempty"`
}

func (g *goldenStream) bytes(t testing.TB) []byte {
	if g.InputBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(g.InputBase64)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	sep := "\n"
	if g.CRLF {
		sep = "\r\n"
	}
	return []byte(strings.Join(g.Input, sep))
}

func (g *goldenStream) config() postman.ReaderConfig {
	return postman.ReaderConfig{
		Rule:                 completion.Rule(g.Rule),
		MaxEventBytes:        1 << 20,
		MaxOutputBytes:       4 << 20,
		MaxToolArgumentBytes: 256 << 10,
		Tools:                g.Tools,
		Observed:             g.Observed,
	}
}

// chunkReader returns its parts one per Read.
type chunkReader struct{ parts [][]byte }

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.parts) > 0 && len(c.parts[0]) == 0 {
		c.parts = c.parts[1:]
	}
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	return n, nil
}

// chunks cuts b at random offsets drawn from seed; seed 0 is one chunk and
// seed 1 one byte per chunk.
func chunks(b []byte, seed uint64) [][]byte {
	switch seed {
	case 0:
		return [][]byte{b}
	case 1:
		out := make([][]byte, len(b))
		for i := range b {
			out[i] = b[i : i+1]
		}
		return out
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var out [][]byte
	for len(b) > 0 {
		n := 1 + r.IntN(min(len(b), 97))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// decodeAll runs a reader stream to its end and describes what it produced.
func decodeAll(t testing.TB, s *postman.Stream) goldenResult {
	t.Helper()
	var res goldenResult
	res.Events = []goldenEvent{}
	var events []chat.Event
	for i := 0; ; i++ {
		if i > 1_000_000 {
			t.Fatal("stream does not end")
		}
		ev, err := s.Next(t.Context())
		if err != nil {
			if errors.Is(err, io.EOF) && err == io.EOF {
				res.End = "EOF"
			} else {
				res.End = string(errs.CodeOf(err))
			}
			break
		}
		res.Events = append(res.Events, describe(ev))
		events = append(events, ev)
	}
	o := s.Outcome()
	res.State = string(o.State)
	res.ConversationID = s.ConversationID()
	if l, ok := s.ModelObserved(); ok {
		res.ModelObserved = &l
	}
	for _, c := range postman.ToolCalls(s, events) {
		res.ToolCalls = append(res.ToolCalls, goldenCall{c.Index, c.UpstreamID, c.UpstreamGroupID, c.Synthetic, c.Name, c.Arguments})
	}
	return res
}

func describe(ev chat.Event) goldenEvent {
	switch ev.Kind {
	case chat.EventText:
		return goldenEvent{Kind: "text", Text: ev.Text}
	case chat.EventConversation:
		return goldenEvent{Kind: "conversation", ConversationID: ev.ConversationID}
	case chat.EventUsage:
		return goldenEvent{Kind: "usage", PromptTokens: ev.Usage.PromptTokens, CompletionTokens: ev.Usage.CompletionTokens, TotalTokens: ev.Usage.TotalTokens}
	case chat.EventToolCall:
		i := ev.ToolCall.Index
		return goldenEvent{Kind: "tool_call", Index: &i, UpstreamID: ev.ToolCall.UpstreamID, UpstreamGroupID: ev.ToolCall.UpstreamGroupID,
			Name: ev.ToolCall.Name, Arguments: ev.ToolCall.ArgumentsFragment}
	}
	return goldenEvent{Kind: "invalid"}
}

func goldenFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "streams", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden streams: %v", err)
	}
	sort.Strings(files)
	return files
}

func readGolden(t testing.TB, path string) goldenStream {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g goldenStream
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return g
}

// TestGoldenStreams decodes every golden stream whole, byte by byte and in
// random chunkings; all must give the expected events and outcome.
func TestGoldenStreams(t *testing.T) {
	for _, path := range goldenFiles(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			g := readGolden(t, path)
			input := g.bytes(t)
			got := decodeAll(t, postman.NewReaderStream(&chunkReader{parts: chunks(input, 0)}, g.config()))
			if *update {
				g.Expected = &got
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				is.NoErr(enc.Encode(g))                          // golden file encodes
				is.NoErr(os.WriteFile(path, buf.Bytes(), 0o644)) // golden file written
				return
			}
			is.True(g.Expected != nil)                                            // the golden file has expectations (run with -update)
			is.Equal(got, *g.Expected)                                            // decoding the whole input gives the golden result
			is.Equal(got.End == "EOF", strings.HasPrefix(got.State, "COMPLETE_")) // io.EOF exactly for completions
			for seed := uint64(1); seed < 6; seed++ {
				again := decodeAll(t, postman.NewReaderStream(&chunkReader{parts: chunks(input, seed)}, g.config()))
				is.Equal(again, got) // the chunking does not change the result
			}
		})
	}
}
