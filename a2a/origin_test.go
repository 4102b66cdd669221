package a2a

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

var peerHeaders = map[string]string{"Authorization": "Bearer s3cret", "X-Api-Key": "k3y-s3cret"}

// credentialsIn lists the configured headers that hs carry.
func credentialsIn(hs []http.Header) []string {
	var out []string
	for i, h := range hs {
		for k := range peerHeaders {
			if v := h.Get(k); v != "" {
				out = append(out, fmt.Sprintf("request %d: %s: %s", i, k, v))
			}
		}
	}
	return out
}

// A peer whose card redirects to another origin, another host name or another port, is not followed there: the
// other origin gets no request, so none of the configured headers.
func TestPeerCrossOriginRedirectRefused(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer other.Close()
	for _, target := range []struct{ name, url string }{
		{"other host", strings.Replace(other.URL, "127.0.0.1", "localhost", 1)},
		{"other port", other.URL},
	} {
		for _, code := range []int{http.StatusTemporaryRedirect, http.StatusFound} {
			t.Run(fmt.Sprintf("%s/%d", target.name, code), func(t *testing.T) {
				mu.Lock()
				seen = nil
				mu.Unlock()
				first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, target.url+r.URL.RequestURI(), code)
				}))
				defer first.Close()
				ps, err := Connect(testwait.Context(t, peerSettle), []PeerConfig{
					{Name: "peer", URL: first.URL, Required: true, Headers: peerHeaders},
				}, &Options{ResolveTimeout: 10 * time.Second})
				if err == nil {
					ps.Close()
					t.Error("Connect followed the redirect to another origin")
				} else if !strings.Contains(err.Error(), "redirect to another origin refused") {
					t.Errorf("Connect = %v, want the redirect refused", err)
				}
				mu.Lock()
				defer mu.Unlock()
				if got := credentialsIn(seen); len(got) > 0 {
					t.Errorf("the other origin got the configured headers: %q", got)
				}
				if len(seen) != 0 {
					t.Errorf("the other origin got %d requests, want none", len(seen))
				}
			})
		}
	}
}

// A card that names its interface at another origin than the peer's url gets its calls there without the
// configured headers; at the peer's own origin they carry them.
func TestPeerInterfaceElsewhereGetsNoHeaders(t *testing.T) {
	answer := map[string]func(http.ResponseWriter, json.RawMessage, json.RawMessage){
		"SendMessage": func(w http.ResponseWriter, id, _ json.RawMessage) {
			writeRPCResult(w, id, `{"task":`+fakeTask("t1", "COMPLETED",
				`[{"artifactId":"a1","name":"result","parts":[{"text":"done"}]}]`)+`}`)
		},
	}
	for _, tt := range []struct {
		name        string
		url         func(*fakePeer) string // the configured url; the card names f.srv.URL
		wantHeaders bool
	}{
		{"same origin", func(f *fakePeer) string { return f.srv.URL }, true},
		{"other host", func(f *fakePeer) string { return strings.Replace(f.srv.URL, "127.0.0.1", "localhost", 1) }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakePeer(t, false, answer)
			h := newPeerLoop(t, nil, PeerConfig{Name: "fake", URL: tt.url(f), Required: true, Headers: peerHeaders})
			r := h.ask(t, &host.Request{Prompt: "go"}, callPeer("p", "fake", "work"), say("Done."))
			if got := r.toolMessage(t, "p"); got != "done" {
				t.Errorf("the model read %q", got)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.headers) == 0 {
				t.Fatal("the interface got no call")
			}
			got := credentialsIn(f.headers)
			switch {
			case tt.wantHeaders && len(got) != 2*len(f.headers):
				t.Errorf("the peer's own origin got %q, want the configured headers on each request", got)
			case !tt.wantHeaders && len(got) > 0:
				t.Errorf("the interface at another origin got the configured headers: %q", got)
			}
			for _, hd := range f.headers {
				if hd.Get("A2A-Version") != "1.0" {
					t.Errorf("A2A-Version %q", hd.Get("A2A-Version"))
				}
			}
		})
	}
}
