package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cookieName names the session cookie.
const cookieName = "agenthost_console"

// Sessions expire after sessionIdle without a request; at most maxSessions are kept, the least recently used
// dropped first.
const (
	sessionIdle = 12 * time.Hour
	maxSessions = 64
)

// session is a logged-in browser.
type session struct {
	id, csrf, subject string
	// expires is the JWT's expiry; zero for a static token.
	expires  time.Time
	lastSeen time.Time
}

// sessions are the console's sessions. They live in memory: a restart logs everyone out.
type sessions struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*session
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{now: now, m: map[string]*session{}}
}

// open opens a session for subject until expires (zero: until idle), dropping the least recently used one when
// full.
func (s *sessions) open(subject string, expires time.Time) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for id, ss := range s.m {
		if s.endedLocked(ss, now) {
			delete(s.m, id)
		}
	}
	for len(s.m) >= maxSessions {
		var oldest *session
		for _, ss := range s.m {
			if oldest == nil || ss.lastSeen.Before(oldest.lastSeen) {
				oldest = ss
			}
		}
		delete(s.m, oldest.id)
	}
	ss := &session{id: rand.Text() + rand.Text(), csrf: rand.Text(), subject: subject, expires: expires, lastSeen: now}
	s.m[ss.id] = ss
	return ss
}

// get returns the live session id, marking it used.
func (s *sessions) get(id string) (*session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[id]
	if !ok {
		return nil, false
	}
	now := s.now()
	if s.endedLocked(ss, now) {
		delete(s.m, id)
		return nil, false
	}
	ss.lastSeen = now
	return ss, true
}

func (s *sessions) close(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

func (s *sessions) endedLocked(ss *session, now time.Time) bool {
	return now.Sub(ss.lastSeen) > sessionIdle || (!ss.expires.IsZero() && !now.Before(ss.expires))
}

// caller is who made a request, as access found it.
type caller struct {
	// session is the request's session; nil for an unprotected console or a bearer token.
	session *session
	// bearer says the request carried a valid bearer token (a script): no CSRF token is needed.
	bearer bool
	// subject is the caller's, of its session or bearer token: with [serve] auth_tokens_env or [serve.oauth]
	// everything it sees and does is scoped to it. "" is the operator (no login, or [serve] auth_token_env's
	// token), who sees everything.
	subject string
}

type callerKey struct{}

func callerOf(r *http.Request) caller {
	c, _ := r.Context().Value(callerKey{}).(caller)
	return c
}

// access lets a request through to next when it may: the page's files always; on a protected console, /api/session
// and /api/login always, the rest of /api with the session cookie or a bearer token; and a request that changes
// anything only with the CSRF token and, when it has a body, as JSON.
func (c *Console) access(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isAPI(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		var who caller
		if c.protected() {
			if bearer, ok := bearerToken(r); ok {
				subject, _, err := c.checkToken(r.Context(), bearer)
				if err != nil {
					w.Header().Set("WWW-Authenticate", `Bearer realm="agenthost", error="invalid_token"`)
					writeError(w, http.StatusUnauthorized, "the bearer token is not valid")
					return
				}
				who.bearer, who.subject = true, subject
			} else if ck, err := r.Cookie(cookieName); err == nil {
				if who.session, _ = c.sessions.get(ck.Value); who.session != nil {
					who.subject = who.session.subject
				}
			}
			open := r.URL.Path == "/api/session" || r.URL.Path == "/api/login"
			if who.session == nil && !who.bearer && !open {
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "log in first", "login": c.authKind()})
				return
			}
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if r.ContentLength != 0 && !isJSON(r.Header.Get("Content-Type")) {
				writeError(w, http.StatusUnsupportedMediaType, "the body must be JSON (Content-Type application/json)")
				return
			}
			if r.URL.Path != "/api/login" && !who.bearer && !c.csrfMatches(who, r.Header.Get("X-CSRF-Token")) {
				writeError(w, http.StatusForbidden, "forbidden: missing or wrong X-CSRF-Token")
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, who)))
	})
}

// csrfMatches compares the request's CSRF token with the session's, or the console's when it is unprotected, in
// constant time.
func (c *Console) csrfMatches(who caller, got string) bool {
	want := c.csrf
	if c.protected() {
		if who.session == nil {
			return false
		}
		want = who.session.csrf
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// checkToken checks a token given to log in or as a bearer: every static token compared in constant time, so that
// the time says nothing of which matched, then, when none did, as a JWT of [serve.oauth].
func (c *Console) checkToken(ctx context.Context, token string) (subject string, expires time.Time, err error) {
	matched := false
	if c.opts.Token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(c.opts.Token)) == 1 {
		matched = true
	}
	for t, sub := range c.opts.Tokens {
		if subtle.ConstantTimeCompare([]byte(token), []byte(t)) == 1 {
			subject, matched = sub, true
		}
	}
	if matched {
		return subject, time.Time{}, nil
	}
	if c.opts.Verify != nil && token != "" {
		subject, expires, err := c.opts.Verify(ctx, token)
		if err == nil && subject == "" {
			// A JWT naming nobody would log in as the operator, who sees every caller's runs.
			err = errors.New("console: the token names no subject")
		}
		return subject, expires, err
	}
	return "", time.Time{}, errBadToken
}

var errBadToken = &tokenError{}

type tokenError struct{}

func (*tokenError) Error() string { return "console: the token is not valid" }

func bearerToken(r *http.Request) (string, bool) {
	const prefix = "Bearer "
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, prefix) {
		return "", false
	}
	return h[len(prefix):], true
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// session answers GET /api/session.
func (c *Console) session(w http.ResponseWriter, r *http.Request) {
	who := callerOf(r)
	if c.protected() && who.session == nil && !who.bearer {
		// Not a failure: the page asks how to log in, and a 401 here would be logged by every browser as one.
		writeJSON(w, http.StatusOK, map[string]string{"login": c.authKind()})
		return
	}
	csrf := c.csrf
	switch {
	case who.session != nil:
		csrf = who.session.csrf
	case who.bearer:
		csrf = "" // a bearer token needs none
	}
	var schema any
	if len(c.opts.OutputSchema) > 0 {
		schema = c.opts.OutputSchema
	}
	features := map[string]bool{
		"state":       c.opts.Conversations != nil,
		"tasks":       c.opts.Tasks != nil,
		"evals":       c.evals != nil,
		"tool_search": c.searchOn(r.Context()),
		"content":     c.opts.Content,
	}
	writeJSON(w, http.StatusOK, map[string]any{"csrf": csrf, "auth": c.authKind(), "agent": c.opts.Agent,
		"features": features, "output_schema": schema})
}

// login answers POST /api/login: a good token opens a session, whose id the cookie holds.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !c.protected() {
		writeError(w, http.StatusConflict, "this console needs no login")
		return
	}
	var body struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "the body must be {\"token\": \"...\"}")
		return
	}
	ip := remoteIP(r)
	// The attempt is counted as a failure before the token is checked, in one step with the check of the wait:
	// guesses sent in parallel cannot all pass before the first of them is counted.
	if wait := c.logins.reserve(ip); wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		writeError(w, http.StatusTooManyRequests, "too many failed logins: wait and try again")
		return
	}
	subject, expires, err := c.checkToken(r.Context(), body.Token)
	if err != nil {
		if failures, log := c.logins.refused(ip); log {
			c.logger.Warn("console: a login was refused", "remote", ip, "failures", failures, "err", err)
		}
		writeError(w, http.StatusUnauthorized, "the token is not valid")
		return
	}
	c.logins.succeeded(ip)
	ss := c.sessions.open(subject, expires)
	ck := &http.Cookie{Name: cookieName, Value: ss.id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || httpsOrigin(r)}
	if !expires.IsZero() {
		ck.Expires = expires
	}
	http.SetCookie(w, ck)
	w.WriteHeader(http.StatusNoContent)
}

// httpsOrigin says whether the page that sent r was loaded over HTTPS, as behind a proxy that ends TLS: its Origin
// (which the guard has checked against the console's own and [serve] allowed_origins) is an https one. The browser
// sets Origin, so no forwarded header needs trusting; a client that lies about it gets a cookie it cannot send back
// over plain HTTP.
func httpsOrigin(r *http.Request) bool {
	return strings.HasPrefix(strings.ToLower(r.Header.Get("Origin")), "https://")
}

// remoteIP is the address a request came from, without its port.
func remoteIP(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// After loginFreeFailures failed logins from one address, each further attempt must wait, loginFirstDelay after
// the last failure, doubling with each failure up to loginMaxDelay. At most maxLoginAddrs addresses are
// remembered, the one failed least recently forgotten first; a failed login is logged at most once per address
// per loginLogEvery.
const (
	loginFreeFailures = 5
	loginFirstDelay   = time.Second
	loginMaxDelay     = 30 * time.Second
	maxLoginAddrs     = 1024
	loginLogEvery     = time.Minute
)

// loginLimiter slows down the guessing of tokens, per remote address.
type loginLimiter struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*loginFailures
}

type loginFailures struct {
	n                         int
	last, notBefore, loggedAt time.Time
}

func newLoginLimiter(now func() time.Time) *loginLimiter {
	return &loginLimiter{now: now, m: map[string]*loginFailures{}}
}

// wait is how long ip must wait before it may try again; 0 when it may now.
func (l *loginLimiter) wait(ip string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.m[ip]; ok {
		return max(f.notBefore.Sub(l.now()), 0)
	}
	return 0
}

// reserve is wait and failed in one step: when ip may try now, its attempt is counted as failed (succeeded forgets
// it) and reserve returns 0; else how long ip must wait, and nothing is counted.
func (l *loginLimiter) reserve(ip string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if f, ok := l.m[ip]; ok && f.notBefore.After(now) {
		return f.notBefore.Sub(now)
	}
	l.count(ip, now)
	return 0
}

// refused says how many failures ip has, its reserved attempt that failed counted, and whether to log this one.
func (l *loginLimiter) refused(ip string) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.m[ip]
	if !ok { // forgotten meanwhile, as the least recent of maxLoginAddrs
		return 0, false
	}
	now := l.now()
	log := f.loggedAt.IsZero() || now.Sub(f.loggedAt) >= loginLogEvery
	if log {
		f.loggedAt = now
	}
	return f.n, log
}

// failed counts a failed login of ip, and returns the failures so far and whether to log this one.
func (l *loginLimiter) failed(ip string) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f := l.count(ip, now)
	log := f.loggedAt.IsZero() || now.Sub(f.loggedAt) >= loginLogEvery
	if log {
		f.loggedAt = now
	}
	return f.n, log
}

// count counts a failure of ip at now; l.mu is held.
func (l *loginLimiter) count(ip string, now time.Time) *loginFailures {
	f, ok := l.m[ip]
	if !ok {
		if len(l.m) >= maxLoginAddrs {
			var oldest string
			for k, v := range l.m {
				if oldest == "" || v.last.Before(l.m[oldest].last) {
					oldest = k
				}
			}
			delete(l.m, oldest)
		}
		f = &loginFailures{}
		l.m[ip] = f
	}
	f.n++
	f.last = now
	if f.n >= loginFreeFailures {
		delay := loginMaxDelay
		if shift := f.n - loginFreeFailures; shift < 6 {
			delay = min(loginFirstDelay<<shift, loginMaxDelay)
		}
		f.notBefore = now.Add(delay)
	}
	return f
}

// succeeded forgets the failures of ip; when it last logged one is kept, so that the log stays bounded.
func (l *loginLimiter) succeeded(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f, ok := l.m[ip]; ok {
		f.n, f.notBefore = 0, time.Time{}
	}
}

// logout answers POST /api/logout: the session ends and the cookie is cleared.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if ss := callerOf(r).session; ss != nil {
		c.sessions.close(ss.id)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1,
		Secure: r.TLS != nil || httpsOrigin(r)})
	w.WriteHeader(http.StatusNoContent)
}
