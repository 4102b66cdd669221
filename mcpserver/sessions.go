package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/httpedge"
)

// slotHeader carries, from limitSessions to the initialize it lets through, the key of the place it took for the
// session. limitSessions sets it on every request it passes on (to "" unless it took a place), so a caller cannot
// choose it.
const slotHeader = "Agenthost-Session-Slot"

// codeServerBusy is the JSON-RPC error of a session refused for a cap: in the range JSON-RPC leaves to servers, and
// used by neither MCP nor A2A.
const codeServerBusy = -32000

// slot is a place taken in httpedge.Sessions for a session being created. The initialize that creates the session
// adopts it and gives it back when the session ends; if none does by the end of the request, the request gives it
// back.
type slot struct {
	release func()
	state   atomic.Int32 // 0 pending, 1 adopted by a session, 2 given back by the request
}

// limitSessions admits a new session (a POST without Mcp-Session-Id) only when sessions has a place for it, and
// for its subject (the token's, under OAuth) fewer than perSubject; it answers the others 503 or 429 with
// Retry-After and a JSON-RPC error saying why. The place is given back when the session ends: closed by its
// client (DELETE), idle past the session timeout, or never initialized.
func (s *Server) limitSessions(next http.Handler, sessions *httpedge.Sessions, perSubject int) http.Handler {
	s.adoptSlotsOnce.Do(func() { s.mcp.AddReceivingMiddleware(s.adoptSlot) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(slotHeader)
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(w, r)
			return
		}
		var subject string
		if info := auth.TokenInfoFromContext(r.Context()); info != nil {
			subject = info.UserID
		}
		release, err := sessions.Open("session", subject, perSubject)
		if err != nil {
			le := err.(*httpedge.LimitError)
			le.WriteHeaders(w)
			_ = json.NewEncoder(w).Encode(map[string]any{
				"jsonrpc": "2.0", "id": nil,
				"error": map[string]any{"code": codeServerBusy, "message": le.Message},
			})
			return
		}
		sl := &slot{release: release}
		key := rand.Text()
		s.slots.Store(key, sl)
		r.Header.Set(slotHeader, key)
		defer func() {
			s.slots.Delete(key)
			if sl.state.CompareAndSwap(0, 2) {
				release()
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// adoptSlot hands the place limitSessions took for a new session to the session its initialize creates: the place
// is given back when the session ends.
func (s *Server) adoptSlot(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "initialize" {
			return next(ctx, method, req)
		}
		extra := req.GetExtra()
		session, ok := req.GetSession().(*mcp.ServerSession)
		if extra == nil || extra.Header == nil || !ok {
			return next(ctx, method, req)
		}
		if v, ok := s.slots.Load(extra.Header.Get(slotHeader)); ok {
			if sl := v.(*slot); sl.state.CompareAndSwap(0, 1) {
				// The session owns this goroutine: it ends when the session does.
				go func() {
					_ = session.Wait()
					sl.release()
				}()
			}
		}
		return next(ctx, method, req)
	}
}
