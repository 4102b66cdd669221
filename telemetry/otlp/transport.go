package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/internal/origin"
)

// The two OTLP transports over net/http. OTLP/HTTP posts the encoded request to the signal's URL. OTLP/gRPC is a
// unary gRPC call, which is an HTTP/2 POST to the method's path: the request is one length-prefixed message, and
// the outcome comes in the grpc-status trailer (or header, for a response without a body). Plain http endpoints
// speak HTTP/2 with prior knowledge (h2c), https ones negotiate h2 by ALPN.

const (
	userAgent = "agenthost OTLP exporter"
	// maxResponse bounds what is read of a collector's answer: a partial success, or an error's text.
	maxResponse = 4 << 20
	// maxErrorBody bounds how much of an error response's body an error quotes.
	maxErrorBody = 1 << 10
)

// client posts the encoded export requests of one signal to its collector. It compresses into buffers it keeps from
// one export to the next, so the exporter calls it for one export at a time.
type client struct {
	target *target
	url    string
	tr     *http.Transport
	http   *http.Client
	zw     *gzip.Writer
	zbuf   bytes.Buffer
}

func newClient(t *target) *client {
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        10,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     t.tls,
	}
	c := &client{target: t, url: t.url.String(), tr: tr}
	if t.proto == ProtocolGRPC {
		var p http.Protocols
		if t.url.Scheme == "http" {
			p.SetUnencryptedHTTP2(true)
			tr.Proxy = nil // a proxy would get HTTP/2 with prior knowledge, which it does not expect
		} else {
			p.SetHTTP2(true)
		}
		tr.Protocols = &p
		// gRPC has no redirects: a 3xx is an error like any other HTTP status.
		c.http = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		return c
	}
	// The headers may carry credentials: they go only to the collector's origin, and a redirect elsewhere is
	// refused.
	c.http = origin.Client(&http.Client{Transport: tr}, origin.Of(t.url), t.headers)
	return c
}

// closeIdle closes the connections kept for the next export, and the goroutines that serve them.
func (c *client) closeIdle() { c.tr.CloseIdleConnections() }

// send posts body, an encoded export request, retrying as the specification says, and returns the encoded export
// response: empty when the collector sent none.
func (c *client) send(ctx context.Context, body []byte) ([]byte, error) {
	if c.target.gzip {
		var err error
		if body, err = c.compress(body); err != nil {
			return nil, err
		}
	}
	var resp []byte
	if c.target.proto == ProtocolGRPC {
		// Message frame: compressed flag, big-endian length, message. A new slice for each export: see below.
		frame := make([]byte, 5, 5+len(body))
		frame[0] = boolByte(c.target.gzip)
		binary.BigEndian.PutUint32(frame[1:], uint32(len(body)))
		frame = append(frame, body...)
		if c.target.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeoutCause(ctx, c.target.timeout, errors.New("OTLP export timeout"))
			defer cancel()
		}
		err := retry(ctx, func(ctx context.Context) (err error) {
			resp, err = c.postGRPC(ctx, frame)
			return err
		})
		return resp, err
	}
	// The body the requests read is a copy of its own, never written again: net/http may go on reading a request's
	// body after Do returned (a collector that answers before it has read it all), while the next export encodes
	// into the buffers body comes from. One allocation per export, which batches many spans.
	body = bytes.Clone(body)
	err := retry(ctx, func(ctx context.Context) (err error) {
		resp, err = c.postHTTP(ctx, body)
		return err
	})
	return resp, err
}

func (c *client) compress(body []byte) ([]byte, error) {
	c.zbuf.Reset()
	if c.zw == nil {
		c.zw = gzip.NewWriter(&c.zbuf)
	} else {
		c.zw.Reset(&c.zbuf)
	}
	if _, err := c.zw.Write(body); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if err := c.zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return c.zbuf.Bytes(), nil
}

// postHTTP makes one OTLP/HTTP request. The timeout bounds each request, as in the Go exporter.
func (c *client) postHTTP(ctx context.Context, body []byte) ([]byte, error) {
	reqCtx := ctx
	if c.target.timeout > 0 {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithTimeout(ctx, c.target.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", userAgent)
	if c.target.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// A request that timed out is tried again while the export has time; a refused redirect or connection
		// is not, as in the Go exporter.
		var ne net.Error
		if ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()) {
			return nil, &retryable{err: err}
		}
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if err != nil {
			return nil, fmt.Errorf("read the response: %w", err)
		}
		if mt, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); strings.TrimSpace(mt) != "application/x-protobuf" {
			return nil, nil // nothing this exporter reads: a JSON partial success is for JSON clients
		}
		return data, nil
	}
	msg := strings.TrimSpace(string(data[:min(len(data), maxErrorBody)]))
	if msg == "" {
		msg = "(empty)"
	}
	err = fmt.Errorf("%s: %s (body: %s)", c.url, resp.Status, msg)
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return nil, &retryable{err: err, throttle: retryAfter(resp.Header.Get("Retry-After"))}
	}
	return nil, err
}

// retryAfter is a Retry-After header's wait: seconds, or a date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, int64(time.Duration(1<<63-1)/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// gRPC status codes.
const (
	codeOK                = 0
	codeCanceled          = 1
	codeUnknown           = 2
	codeDeadlineExceeded  = 4
	codePermissionDenied  = 7
	codeResourceExhausted = 8
	codeAborted           = 10
	codeOutOfRange        = 11
	codeUnimplemented     = 12
	codeInternal          = 13
	codeUnavailable       = 14
	codeDataLoss          = 15
	codeUnauthenticated   = 16
)

var codeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// statusError is a gRPC call's failure.
type statusError struct {
	code    int
	message string
	details []byte // a google.rpc.Status, from grpc-status-details-bin
}

func (e *statusError) Error() string {
	name := "code " + strconv.Itoa(e.code)
	if e.code >= 0 && e.code < len(codeNames) {
		name = codeNames[e.code]
	}
	return fmt.Sprintf("gRPC status %s: %s", name, e.message)
}

// postGRPC makes one OTLP/gRPC call.
func (c *client) postGRPC(ctx context.Context, frame []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(frame))
	if err != nil {
		return nil, err
	}
	for k, v := range c.target.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Grpc-Accept-Encoding", "gzip")
	if c.target.gzip {
		req.Header.Set("Grpc-Encoding", "gzip")
	}
	if d, ok := ctx.Deadline(); ok {
		req.Header.Set("Grpc-Timeout", grpcTimeout(time.Until(d)))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// As gRPC does, a call that could not be made is UNAVAILABLE, which is retried while the export has time.
		return nil, statusOf(&statusError{code: codeUnavailable, message: err.Error()})
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, statusOf(&statusError{code: httpStatusCode(resp.StatusCode), message: "HTTP status " + resp.Status})
	}
	// The trailers come after the body.
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, statusOf(&statusError{code: codeUnavailable, message: err.Error()})
	}
	md := resp.Trailer
	if md.Get("Grpc-Status") == "" {
		md = resp.Header // a response without a message may carry its status in the headers alone
	}
	st := md.Get("Grpc-Status")
	if st == "" {
		return nil, &statusError{code: codeInternal, message: "the response has no grpc-status"}
	}
	code, err := strconv.Atoi(st)
	if err != nil {
		return nil, &statusError{code: codeUnknown, message: "grpc-status " + strconv.Quote(st)}
	}
	if code != codeOK {
		e := &statusError{code: code, message: md.Get("Grpc-Message")}
		if m, err := url.PathUnescape(e.message); err == nil {
			e.message = m
		}
		if d := md.Get("Grpc-Status-Details-Bin"); d != "" {
			e.details, _ = base64.RawStdEncoding.DecodeString(strings.TrimRight(d, "="))
		}
		return nil, statusOf(e)
	}
	if len(data) < 5 {
		return nil, nil
	}
	n := binary.BigEndian.Uint32(data[1:5])
	if uint64(n) > uint64(len(data)-5) {
		return nil, &statusError{code: codeInternal, message: "the response message is truncated"}
	}
	msg := data[5 : 5+n]
	if data[0] == 1 {
		if resp.Header.Get("Grpc-Encoding") != "gzip" {
			return nil, &statusError{code: codeInternal, message: "the response is compressed with " + strconv.Quote(resp.Header.Get("Grpc-Encoding"))}
		}
		zr, err := gzip.NewReader(bytes.NewReader(msg))
		if err != nil {
			return nil, &statusError{code: codeInternal, message: "the response: " + err.Error()}
		}
		if msg, err = io.ReadAll(io.LimitReader(zr, maxResponse)); err != nil {
			return nil, &statusError{code: codeInternal, message: "the response: " + err.Error()}
		}
	}
	return msg, nil
}

// statusOf returns e, made retryable when its code is one the Go exporter retries: CANCELLED, DEADLINE_EXCEEDED,
// ABORTED, OUT_OF_RANGE, UNAVAILABLE and DATA_LOSS, after the delay a RetryInfo in its details asks for if any;
// RESOURCE_EXHAUSTED only when it has a RetryInfo, which says recovery is possible.
func statusOf(e *statusError) error {
	delay, hasInfo := retryInfo(e.details)
	switch e.code {
	case codeCanceled, codeDeadlineExceeded, codeAborted, codeOutOfRange, codeUnavailable, codeDataLoss:
		return &retryable{err: e, throttle: delay}
	case codeResourceExhausted:
		if hasInfo {
			return &retryable{err: e, throttle: delay}
		}
	}
	return e
}

// retryInfo finds a google.rpc.RetryInfo in status, an encoded google.rpc.Status (details = 3, each an Any:
// type_url = 1, value = 2), and returns its retry_delay (a Duration: seconds = 1, nanos = 2).
func retryInfo(status []byte) (time.Duration, bool) {
	var delay time.Duration
	found := false
	_ = fields(status, func(f field) error {
		if f.num != 3 || f.wire != wireBytes {
			return nil
		}
		var typeURL string
		var value []byte
		if fields(f.data, func(a field) error {
			switch {
			case a.num == 1 && a.wire == wireBytes:
				typeURL = string(a.data)
			case a.num == 2 && a.wire == wireBytes:
				value = a.data
			}
			return nil
		}) != nil || !strings.HasSuffix(typeURL, "/google.rpc.RetryInfo") {
			return nil
		}
		found = true
		return fields(value, func(r field) error {
			if r.num == 1 && r.wire == wireBytes {
				return fields(r.data, func(d field) error {
					switch {
					case d.num == 1 && d.wire == wireVarint:
						delay += time.Duration(int64(d.n)) * time.Second
					case d.num == 2 && d.wire == wireVarint:
						delay += time.Duration(int32(d.n))
					}
					return nil
				})
			}
			return nil
		})
	})
	return max(delay, 0), found
}

// httpStatusCode is the gRPC code of an HTTP status a gRPC server, or a proxy before it, answered with, as the
// gRPC specification maps them.
func httpStatusCode(status int) int {
	switch status {
	case http.StatusBadRequest:
		return codeInternal
	case http.StatusUnauthorized:
		return codeUnauthenticated
	case http.StatusForbidden:
		return codePermissionDenied
	case http.StatusNotFound:
		return codeUnimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return codeUnavailable
	}
	return codeUnknown
}

// grpcTimeout is d as a grpc-timeout header value: at most eight digits and a unit.
func grpcTimeout(d time.Duration) string {
	d = max(d, time.Millisecond)
	if ms := d.Milliseconds(); ms < 1e8 {
		return strconv.FormatInt(ms, 10) + "m"
	}
	return strconv.FormatInt(min(int64(d/time.Second), 1e8-1), 10) + "S"
}

// retryable is a failure that may pass: the export is tried again after throttle, or the backoff if longer.
type retryable struct {
	err      error
	throttle time.Duration
}

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// backoff is the Go exporters': the wait before a retry starts at 5 s and grows by half up to 30 s, each wait
// randomized by ±50 %, and no retry starts later than a minute after the first attempt.
var backoff = struct{ initial, max, elapsed time.Duration }{5 * time.Second, 30 * time.Second, time.Minute}

// sleep waits d, or until ctx ends. Tests replace it to see the waits without waiting.
var sleep = func(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// retry calls attempt until it succeeds, fails for good, or the backoff or ctx ends.
func retry(ctx context.Context, attempt func(context.Context) error) error {
	start := time.Now()
	interval := backoff.initial
	for {
		err := attempt(ctx)
		var r *retryable
		if !errors.As(err, &r) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", context.Cause(ctx), r.err)
		}
		if time.Since(start)+r.throttle > backoff.elapsed {
			return fmt.Errorf("gave up retrying after %s: %w", backoff.elapsed, r.err)
		}
		delay := max(r.throttle, time.Duration(float64(interval)*(0.5+rand.Float64())))
		interval = min(interval+interval/2, backoff.max)
		if err := sleep(ctx, delay); err != nil {
			return fmt.Errorf("%w: %w", err, r.err)
		}
	}
}
