package pmconfig

import "net/http"

// Header names sent upstream (canonical MIME form). Nothing else is ever sent:
// no Authorization, no downstream key, no caller header.
const (
	HeaderContentType = "Content-Type"
	HeaderAccept      = "Accept"
	HeaderCookie      = "Cookie"
	HeaderAccessToken = "X-Access-Token"
	HeaderReqService  = "X-Pstmn-Req-Service"
	HeaderOrigin      = "Origin"
	HeaderReferer     = "Referer"
	HeaderUserAgent   = "User-Agent"
	HeaderAppVersion  = "X-App-Version"
)

// Constant header values.
const (
	ContentTypeJSON = "application/json"
	AcceptSSE       = "text/event-stream"
	ReqService      = "agent-mode-service"
	cookieName      = "postman.sid"
)

// Headers returns a fresh allowlisted header set for one chat request
// (docs/UPSTREAM.md); changing it never affects a later call.
//
// web_session: Content-Type, Accept, Cookie (postman.sid=<value>),
// X-Pstmn-Req-Service, Origin and Referer derived from the subdomain,
// User-Agent, and X-App-Version only when configured.
//
// access_token: Content-Type, Accept, X-Access-Token, X-Pstmn-Req-Service,
// User-Agent, and X-App-Version only when configured; no Cookie, Origin or
// Referer.
func (c Config) Headers() http.Header {
	h := make(http.Header, 8)
	h.Set(HeaderContentType, ContentTypeJSON)
	h.Set(HeaderAccept, AcceptSSE)
	switch c.Strategy {
	case StrategyWebSession:
		h.Set(HeaderCookie, cookieName+"="+c.SessionCookie)
		h.Set(HeaderOrigin, webOrigin(c.Subdomain))
		h.Set(HeaderReferer, webOrigin(c.Subdomain)+"/")
	case StrategyAccessToken:
		h.Set(HeaderAccessToken, c.AccessToken)
	}
	h.Set(HeaderReqService, ReqService)
	ua := c.UserAgent
	if ua == "" {
		ua = DefaultUserAgent
	}
	h.Set(HeaderUserAgent, ua)
	if c.AppVersion != "" {
		h.Set(HeaderAppVersion, c.AppVersion)
	}
	return h
}
