package faultproxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// target answers with its path, or streams three SSE events on /stream.
func target(t *testing.T) *url.URL {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				fmt.Fprintf(w, "data: %d\n\n", i)
				w.(http.Flusher).Flush()
			}
			return
		}
		fmt.Fprint(w, "hello from "+r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

func TestNoFaults(t *testing.T) {
	p := New(target(t), Options{Rate: 0})
	front := httptest.NewServer(p)
	defer front.Close()
	for range 20 {
		resp, err := http.Get(front.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "hello from /x" {
			t.Fatalf("%d %q", resp.StatusCode, b)
		}
	}
	resp, err := http.Get(front.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, line)
		}
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
	p := New(target(t), Options{Rate: 1, Seed: 7, RetryAfter: 3})
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

// The share of failed requests is the rate, within a wide margin, and the same seed fails the same requests.
func TestRate(t *testing.T) {
	failed := func(seed uint64) []bool {
		p := New(target(t), Options{Rate: 0.2, Seed: seed})
		out := make([]bool, 5000)
		for i := range out {
			out[i] = p.pick() >= 0
		}
		return out
	}
	a, b := failed(1), failed(1)
	n := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("the same seed failed other requests")
		}
		if a[i] {
			n++
		}
	}
	if n < 850 || n > 1150 { // 1000 ± 4.7 standard deviations
		t.Errorf("%d of 5000 failed at rate 0.2", n)
	}
}
