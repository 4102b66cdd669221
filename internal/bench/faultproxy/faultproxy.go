// Package faultproxy is an HTTP reverse proxy that fails a share of the requests it is sent, the way a model API
// fails under load: 429 with Retry-After, 500, 503, or a connection closed before the first byte of the response.
// The others reach the target untouched, streamed responses included. It is for tests and load tools, and imports
// only the standard library.
package faultproxy

import (
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
)

// Kind is a kind of fault.
type Kind int

const (
	TooManyRequests    Kind = iota // 429 with Retry-After
	InternalError                  // 500
	ServiceUnavailable             // 503
	ConnectionClosed               // the connection closed before the first byte of the response
	kinds
)

func (k Kind) String() string {
	return [...]string{"429 with Retry-After", "500", "503", "connection closed before the first byte"}[k]
}

// Kinds lists every kind of fault.
func Kinds() []Kind {
	return []Kind{TooManyRequests, InternalError, ServiceUnavailable, ConnectionClosed}
}

// Options configures a Proxy.
type Options struct {
	// Rate is the share of requests that fail, 0..1. 0 forwards every request.
	Rate float64
	// Seed seeds the choice of the failing requests and of their faults: with one client sending one request at a
	// time, the same seed fails the same requests the same way.
	Seed uint64
	// RetryAfter is the Retry-After of the 429s, in whole seconds. 0 means 1.
	RetryAfter int
}

// Proxy is a reverse proxy that fails a share of the requests it is sent. It is safe for concurrent use.
type Proxy struct {
	target     *httputil.ReverseProxy
	rate       float64
	retryAfter string

	mu  sync.Mutex
	rnd *rand.Rand

	forwarded atomic.Int64
	faults    [kinds]atomic.Int64
}

var _ http.Handler = (*Proxy)(nil)

// New returns a proxy to target, the base URL of the server behind it. A nil opts forwards every request.
func New(target *url.URL, opts *Options) *Proxy {
	if opts == nil {
		opts = &Options{}
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1                    // pass streamed chunks on at once, whatever their content type
	rp.ErrorLog = log.New(io.Discard, "", 0) // a target that fails shows as a 502 to the client
	retryAfter := opts.RetryAfter
	if retryAfter <= 0 {
		retryAfter = 1
	}
	return &Proxy{
		target:     rp,
		rate:       opts.Rate,
		retryAfter: strconv.Itoa(retryAfter),
		rnd:        rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
	}
}

// pick decides the fate of one request: a fault, or -1 to forward it.
func (p *Proxy) pick() Kind {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rnd.Float64() >= p.rate {
		return -1
	}
	return Kind(p.rnd.IntN(int(kinds)))
}

// ServeHTTP forwards r to the target or answers it with a fault.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k := p.pick()
	if k < 0 {
		p.forwarded.Add(1)
		p.target.ServeHTTP(w, r)
		return
	}
	p.faults[k].Add(1)
	switch k {
	case TooManyRequests:
		w.Header().Set("Retry-After", p.retryAfter)
		fail(w, http.StatusTooManyRequests, "Rate limit reached for requests")
	case InternalError:
		fail(w, http.StatusInternalServerError, "The server had an error while processing your request")
	case ServiceUnavailable:
		fail(w, http.StatusServiceUnavailable, "The engine is currently overloaded, please try again later")
	case ConnectionClosed:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler) // HTTP/2: resets the stream, still without a response
		}
		conn.Close()
	}
}

// fail answers with an error status and an error body shaped like OpenAI's.
func fail(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"server_error"}}`+"\n", message)
}

// Counts are what a proxy did.
type Counts struct {
	Forwarded int64
	Faults    map[Kind]int64
}

// Total is the number of requests the proxy was sent.
func (c Counts) Total() int64 {
	n := c.Forwarded
	for _, f := range c.Faults {
		n += f
	}
	return n
}

// Failed is the number of requests that got a fault.
func (c Counts) Failed() int64 { return c.Total() - c.Forwarded }

// Counts returns what the proxy did so far.
func (p *Proxy) Counts() Counts {
	c := Counts{Forwarded: p.forwarded.Load(), Faults: map[Kind]int64{}}
	for k := range kinds {
		c.Faults[k] = p.faults[k].Load()
	}
	return c
}
