package mcpclients

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// swappable is an HTTP handler whose inner handler a test can replace, as a server restarting behind the same
// address would. It records the Authorization header of every request.
type swappable struct {
	mu      sync.Mutex
	inner   http.Handler
	auth    []string
	nothing atomic.Bool // answer 503 to everything, as a server that is down
}

func (s *swappable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	inner := s.inner
	s.mu.Unlock()
	if s.nothing.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	inner.ServeHTTP(w, r)
}

func (s *swappable) swap(h http.Handler) {
	s.mu.Lock()
	s.inner = h
	s.mu.Unlock()
}

func (s *swappable) authHeaders() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

func streamable(srv *mcp.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

func TestHTTPTransportsAndHeaders(t *testing.T) {
	for _, tt := range []struct {
		transport string
		handler   func(*mcp.Server) http.Handler
	}{
		{TransportHTTP, streamable},
		{TransportSSE, func(srv *mcp.Server) http.Handler {
			return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
		}},
	} {
		t.Run(tt.transport, func(t *testing.T) {
			h := &swappable{inner: tt.handler(echoServer("ping"))}
			ts := httptest.NewServer(h)
			defer ts.Close()
			c, err := Connect(t.Context(), []ServerConfig{{
				Name: "web", Prefix: "web", Transport: tt.transport, URL: ts.URL,
				Headers: map[string]string{"Authorization": "Bearer s3cret"},
			}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res, err := findTool(t, c.Toolsets()[0], "web_ping").Call(bounded(t), json.RawMessage(`{"a":1}`), nil)
			if err != nil || res.Text != `ping:{"a":1}` {
				t.Fatalf("call: %+v, %v", res, err)
			}
			auth := h.authHeaders()
			if len(auth) < 2 {
				t.Fatalf("%d requests seen", len(auth))
			}
			for i, a := range auth {
				if a != "Bearer s3cret" {
					t.Errorf("request %d had Authorization %q", i, a)
				}
			}
			if st := c.Status()[0]; st.Transport != tt.transport || st.State != StateConnected {
				t.Errorf("status %+v", st)
			}
		})
	}
}

// TestHTTPProgressBeforeResult: over both HTTP transports, the progress a server reports just before its result
// reaches the call before the result does.
func TestHTTPProgressBeforeResult(t *testing.T) {
	for _, tt := range []struct {
		transport string
		handler   func(*mcp.Server) http.Handler
	}{
		{TransportHTTP, streamable},
		{TransportSSE, func(srv *mcp.Server) http.Handler {
			return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
		}},
	} {
		t.Run(tt.transport, func(t *testing.T) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "progress", Version: "1"}, nil)
			srv.AddTool(textTool("work", progressThenResult))
			ts := httptest.NewServer(tt.handler(srv))
			defer ts.Close()
			c, err := Connect(t.Context(), []ServerConfig{{Name: "s", Prefix: "s", Transport: tt.transport, URL: ts.URL}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			progressBeforeResult(t, findTool(t, c.Toolsets()[0], "s_work"))
		})
	}
}

// TestHTTPSessionLost restarts the server behind the same URL: the old session is unknown to the new server, so the
// call fails with an error naming the server, the client reconnects, and the next call works. While the server is
// down entirely, calls wait for it up to ReconnectWait, then fail.
func TestHTTPSessionLost(t *testing.T) {
	h := &swappable{inner: streamable(echoServer("ping"))}
	ts := httptest.NewServer(h)
	defer ts.Close()
	c, err := Connect(t.Context(), []ServerConfig{{Name: "web", Prefix: "web", Transport: TransportHTTP, URL: ts.URL, ReconnectWait: 300 * time.Millisecond}},
		&Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ping := findTool(t, c.Toolsets()[0], "web_ping")

	h.nothing.Store(true)
	h.swap(streamable(echoServer("ping"))) // the restarted server knows no session
	res, err := ping.Call(bounded(t), json.RawMessage(`{}`), nil)
	if err != nil || !res.IsError || !strings.Contains(res.Text, `MCP server "web"`) {
		t.Fatalf("call to a server that went away: %+v, %v", res, err)
	}
	eventually(t, "the server is marked as reconnecting", func() bool { return c.Status()[0].State == StateReconnecting })
	res, err = ping.Call(bounded(t), json.RawMessage(`{}`), nil)
	if err != nil || !res.IsError || !strings.Contains(res.Text, "did not come back within") {
		t.Errorf("call while down: %+v, %v", res, err)
	}

	h.nothing.Store(false)
	eventually(t, "the client is connected again", func() bool { return c.Status()[0].State == StateConnected })
	res, err = ping.Call(bounded(t), json.RawMessage(`{"n":2}`), nil)
	if err != nil || res.Text != `ping:{"n":2}` {
		t.Errorf("call after reconnecting: %+v, %v", res, err)
	}
}

// TestLostBeforeSupervised loses the session before the supervisor first looks at it, as a call that fails right
// after start-up can on a busy machine: the supervisor must still reconnect.
func TestLostBeforeSupervised(t *testing.T) {
	ts := httptest.NewServer(streamable(echoServer("ping")))
	defer ts.Close()
	s := newServer(ServerConfig{Name: "web", Prefix: "web", Transport: TransportHTTP, URL: ts.URL},
		&Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	defer s.close()
	if err := s.connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	session := s.session
	s.mu.Unlock()
	s.lost(session, errors.New("the call's connection failed"))
	s.wg.Go(s.supervise)
	eventually(t, "the server is connected again", func() bool { return s.Status().State == StateConnected })
}
