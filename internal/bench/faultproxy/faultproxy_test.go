package faultproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// target echoes the method, path and body of a request, or on /stream sends one SSE event, waits for release,
// then sends two more.
func target(t *testing.T, release <-chan struct{}) *url.URL {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: 0\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			fmt.Fprint(w, "data: 1\n\ndata: 2\n\n")
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo", "yes")
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, body)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

// At rate 0 every request reaches the target and its answer the client, a streamed one event by event.
func TestNoFaults(t *testing.T) {
	release := make(chan struct{})
	p := New(target(t, release), &Options{Rate: 0})
	front := httptest.NewServer(p)
	defer front.Close()
	for i := range 20 {
		resp, err := http.Post(front.URL+"/x", "application/json", strings.NewReader(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("POST /x %d", i); resp.StatusCode != 200 || string(b) != want || resp.Header.Get("X-Echo") != "yes" {
			t.Fatalf("got %d %q (X-Echo %q), want 200 %q", resp.StatusCode, b, resp.Header.Get("X-Echo"), want)
		}
	}

	// The target holds the rest of the stream back until the first event has come through the proxy: a proxy that
	// buffered would see the request cancelled at the deadline instead.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, front.URL+"/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, data)
			if data == "0" {
				close(release)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Errorf("reading the stream after events %q: %v", events, err)
	}
	if strings.Join(events, ",") != "0,1,2" {
		t.Errorf("streamed events %q", events)
	}
	if c := p.Counts(); c.Forwarded != 21 || c.Failed() != 0 {
		t.Errorf("counts %+v", c)
	}
}

// Every request fails, with each kind of fault seen by a real client as a model client would see it.
func TestFaults(t *testing.T) {
	p := New(target(t, nil), &Options{Rate: 1, Seed: 7, RetryAfter: 3})
	front := httptest.NewServer(p)
	defer front.Close()
	seen := map[string]int{}
	for range 200 {
		resp, err := http.Get(front.URL + "/x")
		if err != nil {
			if !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "EOF") {
				t.Fatalf("a closed connection shows as %v", err)
			}
			seen["closed"]++
			continue
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusTooManyRequests:
			if resp.Header.Get("Retry-After") != "3" {
				t.Errorf("429 with Retry-After %q", resp.Header.Get("Retry-After"))
			}
			seen["429"]++
		case 500, 503:
			seen[fmt.Sprint(resp.StatusCode)]++
		default:
			t.Fatalf("status %d at rate 1", resp.StatusCode)
		}
	}
	c := p.Counts()
	for _, k := range []struct {
		name string
		kind Kind
	}{{"429", TooManyRequests}, {"500", InternalError}, {"503", ServiceUnavailable}, {"closed", ConnectionClosed}} {
		if seen[k.name] == 0 || int64(seen[k.name]) != c.Faults[k.kind] {
			t.Errorf("%s: the client saw %d, the proxy counted %d", k.name, seen[k.name], c.Faults[k.kind])
		}
	}
	if c.Forwarded != 0 || c.Total() != 200 {
		t.Errorf("counts %+v", c)
	}
}

// Over many requests sent by a real client, the share that fails is the rate and the kinds come in equal shares,
// within wide margins; the same seed fails the same requests.
func TestRate(t *testing.T) {
	const n, rate = 4000, 0.2
	send := func(seed uint64) (Counts, []bool) {
		p := New(target(t, nil), &Options{Rate: rate, Seed: seed})
		front := httptest.NewServer(p)
		defer front.Close()
		ok := make([]bool, n)
		for i := range ok {
			resp, err := http.Post(front.URL+"/x", "application/json", strings.NewReader("{}"))
			if err != nil {
				continue
			}
			resp.Body.Close()
			ok[i] = resp.StatusCode == http.StatusOK
		}
		return p.Counts(), ok
	}
	c, a := send(1)
	_, b := send(1)
	if !slices.Equal(a, b) {
		t.Error("the same seed failed other requests")
	}
	// 800 ± 7 standard deviations, and 200 ± 5 for each kind.
	if c.Total() != n || c.Failed() < 620 || c.Failed() > 980 {
		t.Errorf("%d of %d requests failed at rate %v", c.Failed(), c.Total(), rate)
	}
	for _, k := range Kinds() {
		if f := c.Faults[k]; f < 130 || f > 270 {
			t.Errorf("%d faults of kind %v in %d", f, k, c.Failed())
		}
	}
	var through int64
	for _, ok := range a {
		if ok {
			through++
		}
	}
	if through != c.Forwarded {
		t.Errorf("the client saw %d requests through, the proxy counted %d", through, c.Forwarded)
	}
}
