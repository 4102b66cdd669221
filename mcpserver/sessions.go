package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agenthost/agenthost/internal/httpedge"
)

// slotHeader carries, from limitSessions to the initialize it lets through, the key of the place it took for the
// session. limitSessions removes it from every request and sets it only on one that took a place, so a caller
// cannot choose it.
const slotHeader = "Agenthost-Session-Slot"

// maxIDBytes is how much of a refused request's body is read to find its id.
const maxIDBytes = 64 << 10

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
			var le *httpedge.LimitError
			if !errors.As(err, &le) {
				http.Error(w, "cannot open a session", http.StatusInternalServerError)
				return
			}
			id := requestID(r)
			le.WriteHeaders(w)
			_ = json.NewEncoder(w).Encode(map[string]any{
				"jsonrpc": "2.0", "id": id,
				"error": map[string]any{"code": httpedge.CodeServerBusy, "message": le.Message},
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

// requestID returns the id of the JSON-RPC request in r's body (its first maxIDBytes), or null when it cannot be
// determined: a body that is not one request, or an id that is neither a string nor a number.
func requestID(r *http.Request) json.RawMessage {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxIDBytes))
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if err != nil || json.Unmarshal(body, &req) != nil {
		return nil
	}
	var id any
	if json.Unmarshal(req.ID, &id) != nil {
		return nil
	}
	switch id.(type) {
	case string, float64:
		return req.ID
	}
	return nil
}
