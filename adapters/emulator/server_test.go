package emulator_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/pmgate/pmgate/adapters/emulator"
)

func TestCAFileIsWrittenAndTrustsTheServer(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dir := filepath.Join(t.TempDir(), "nested")
	s := start(t, func(c *emulator.Config) { c.CADir = dir })
	is.Equal(s.CAFile(), filepath.Join(dir, "ca.pem")) // <CADir>/ca.pem

	raw, err := os.ReadFile(s.CAFile())
	is.NoErr(err) // written
	block, rest := pem.Decode(raw)
	is.True(block != nil)                             // PEM
	is.Equal(block.Type, "CERTIFICATE")               // a certificate, no key
	is.Equal(len(strings.TrimSpace(string(rest))), 0) // nothing else in the file
	ca, err := x509.ParseCertificate(block.Bytes)
	is.NoErr(err)    // parses
	is.True(ca.IsCA) // a CA

	pool := x509.NewCertPool()
	is.True(pool.AppendCertsFromPEM(raw)) // usable as a trust store
	for _, name := range []string{"acme.postman.co", "postman.co", "localhost", ""} {
		conf := &tls.Config{RootCAs: pool, ServerName: name}
		conn, err := tls.Dial("tcp", s.Addr(), conf)
		is.NoErr(err) // verifies for every SAN (and the IP when no name is sent)
		state := conn.ConnectionState()
		is.True(state.Version >= tls.VersionTLS12) // TLS 1.2+
		leaf := state.PeerCertificates[0]
		is.Equal(leaf.PublicKeyAlgorithm, x509.ECDSA) // ECDSA leaf
		conn.Close()
	}
}

func TestTLSBelow12IsRefused(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	conn, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: s.CertPool(), MaxVersion: tls.VersionTLS11})
	if conn != nil {
		conn.Close()
	}
	is.True(err != nil) // TLS 1.1 handshake fails
}

func TestDefaultCADirIsATempDirRemovedOnClose(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s, err := emulator.Start(t.Context(), emulator.Config{WorkspaceID: workspace, AccessToken: token})
	is.NoErr(err) // started
	_, err = os.Stat(s.CAFile())
	is.NoErr(err)       // ca.pem exists
	is.NoErr(s.Close()) // closed
	_, err = os.Stat(filepath.Dir(s.CAFile()))
	is.True(os.IsNotExist(err)) // the temp dir is gone
}

func TestAccessorsDescribeTheListener(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	host, port, err := net.SplitHostPort(s.Addr())
	is.NoErr(err)                                   // host:port
	is.Equal(host, "127.0.0.1")                     // loopback
	is.True(port != "0")                            // a real port
	is.Equal(s.Origin(), "https://127.0.0.1:"+port) // origin of access_token
}

func TestNoSecretInResponsesOrRecordedHeaders(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	web, tok := webPeer(t, s), tokenPeer(t, s)
	// post checks every response body for the secrets.
	web.post(userQuery("ok"))
	web.post(userQuery("bad"), setHeader("Cookie", "postman.sid=SECRET-guess"))
	web.post(userQuery("bad"), setHeader("X-Access-Token", token))
	web.post(userQuery("bad"), setHeader("Authorization", "Bearer SECRET-bearer"))
	tok.post(userQuery("ok"))
	tok.post(userQuery("bad"), setHeader("X-Access-Token", "SECRET-guess"))
	tok.post(userQuery("bad"), setHeader("Cookie", "postman.sid="+cookie))
	tok.post(userQuery("#scenario=auth_failure"))

	recs := s.Requests()
	is.Equal(len(recs), 8) // every request recorded
	for _, r := range recs {
		for name, values := range r.Header {
			for _, v := range values {
				is.True(!strings.Contains(v, "SECRET")) // no secret in any recorded header
				if name == "Cookie" || name == "X-Access-Token" || name == "Authorization" {
					is.Equal(v, "REDACTED") // secret headers redacted
				}
			}
		}
		is.True(!strings.Contains(string(r.Body), "SECRET")) // nor in the body
	}
	is.Equal(recs[0].Header.Get("Cookie"), "REDACTED")         // the cookie was there
	is.Equal(recs[4].Header.Get("X-Access-Token"), "REDACTED") // the token was there
}

func TestCountAndReset(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := tokenPeer(t, s)
	st := p.turn(userQuery("go").withTools(false, true, weatherTool))
	calls, group := st.calls(t)
	p.post(userQuery("x"), setHeader("X-Access-Token", "nope"))
	is.Equal(s.Count(emulator.KindUserQuery), 1) // one query
	is.Equal(s.Count(emulator.KindRejected), 1)  // one rejection
	is.Equal(s.Count("other"), 0)                // unknown kind

	s.Reset()
	is.Equal(len(s.Requests()), 0)               // forgotten
	is.Equal(s.Count(emulator.KindUserQuery), 0) // counts too
	st = p.turn(toolResponse(st.conversationID(), false, weatherTool).grouped(group, result{calls[0].id, "r"}))
	is.Equal(st.text(), "Tool results received: get_weather=r")                // conversations survive Reset
	is.Equal(s.Count(emulator.KindToolResponse), 1)                            // counted after Reset
	is.True(strings.Contains(string(s.Requests()[0].Body), `"TOOL_RESPONSE"`)) // raw body kept
}

func TestEmulatorEndpoints(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t)
	p := webPeer(t, s)
	p.post(userQuery("hello #scenario=empty_stream"))
	p.post(userQuery("x"), setHeader("Cookie", "postman.sid=SECRET"))

	get := func(path string) (int, []byte) {
		resp, err := tokenPeer(t, s).hc.Get(s.Origin() + path)
		is.NoErr(err) // reachable
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		is.NoErr(err) // readable
		assertNoSecrets(t, b)
		return resp.StatusCode, b
	}
	status, b := get("/_emulator/health")
	is.Equal(status, http.StatusOK)        // healthy
	is.Equal(string(b), `{"status":"ok"}`) // fixed body

	status, b = get("/_emulator/requests")
	is.Equal(status, http.StatusOK) // listed
	var list []map[string]any
	is.NoErr(json.Unmarshal(b, &list)) // JSON list
	is.Equal(list, []map[string]any{
		{"strategy": "web_session", "chat_type": "USER_QUERY", "scenario": "empty_stream", "status": float64(200), "turn": float64(1)},
		{"strategy": "web_session", "chat_type": "", "scenario": "", "status": float64(401)},
	}) // summaries only: no body, no header
}

func TestCustomModelsAndLabels(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t, func(c *emulator.Config) {
		c.Models = map[string]string{"CLAUDE_45_HAIKU_BEDROCK": "claude-haiku-4-5"}
	})
	b := userQuery("labelled")
	b.dev()["selectedModel"] = "CLAUDE_45_HAIKU_BEDROCK"
	st := tokenPeer(t, s).turn(b)
	is.Equal(label(st.first("textChunk")), "claude-haiku-4-5") // observed label differs from the enum

	resp, _ := tokenPeer(t, s).post(userQuery("default model is not configured any more"))
	is.Equal(resp.StatusCode, http.StatusBadRequest) // only configured enums are accepted
}

func TestRequestsDuringSlowStreamAreIndependent(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	s := start(t, func(c *emulator.Config) { c.SlowDelay = 5 * time.Millisecond })
	p := webPeer(t, s)
	done := make(chan exchange)
	slowReq := p.request(t.Context(), userQuery("slow #scenario=slow_stream"))
	go func() { done <- p.send(slowReq) }()
	fast := p.turn(userQuery("fast"))
	ex := <-done
	is.NoErr(ex.err) // slow stream answered
	slow := parseStream(t, ex.body)
	is.Equal(fast.text(), greeting+"fast")                       // served meanwhile
	is.Equal(slow.text(), greeting+"slow #scenario=slow_stream") // slow one complete
	is.True(fast.conversationID() != slow.conversationID())      // separate conversations
}
