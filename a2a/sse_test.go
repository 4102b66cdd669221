package a2a

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

// readSSEEvents reads every event of r until the end or an error.
func readSSEEvents(r *sseReader) ([]sseEvent, error) {
	var out []sseEvent
	for {
		ev, err := r.next()
		if err != nil {
			return out, err
		}
		out = append(out, *ev)
	}
}

// byteRepeater yields n copies of b, without holding them all.
type byteRepeater struct {
	b byte
	n int
}

func (r *byteRepeater) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	p = p[:k]
	if k > 0 {
		p[0] = r.b
	}
	for filled := 1; filled < k; filled *= 2 {
		copy(p[filled:], p[:filled])
	}
	r.n -= k
	return k, nil
}

func TestSSEReader(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 70<<10)  // past 64 KiB, bufio.Scanner's default
	huge := strings.Repeat("y", 5<<20+3) // several MiB
	tests := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{"data with space", "data: hello\n\n", []sseEvent{{Data: []byte("hello")}}},
		{"data without space", "data:hello\n\n", []sseEvent{{Data: []byte("hello")}}},
		{"only the first space is dropped", "data:  two\n\n", []sseEvent{{Data: []byte(" two")}}},
		{"empty data", "data:\n\n", []sseEvent{{Data: []byte{}}}},
		{"data without colon", "data\n\n", []sseEvent{{Data: []byte{}}}},
		{"multi-line data", "data: a\ndata: b\ndata:c\n\n", []sseEvent{{Data: []byte("a\nb\nc")}}},
		{"colon in value", `data: {"a":"b:c"}` + "\n\n", []sseEvent{{Data: []byte(`{"a":"b:c"}`)}}},
		{"comments ignored", ": keep-alive\ndata: a\n: more\ndata: b\n\n:\n\n", []sseEvent{{Data: []byte("a\nb")}}},
		{"event type", "event: error\ndata: {}\n\n", []sseEvent{{Type: "error", Data: []byte("{}")}}},
		{"event type resets", "event: error\ndata: 1\n\ndata: 2\n\n", []sseEvent{{Type: "error", Data: []byte("1")}, {Data: []byte("2")}}},
		{"event type without data is dropped", "event: error\n\ndata: 2\n\n", []sseEvent{{Data: []byte("2")}}},
		{"CRLF", "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", []sseEvent{{Data: []byte("a\nb")}, {Data: []byte("c")}}},
		{"lone CR", "data: a\rdata: b\r\rdata: c\r\r", []sseEvent{{Data: []byte("a\nb")}, {Data: []byte("c")}}},
		{"mixed ends", "data: a\r\ndata: b\rdata: c\n\r\n", []sseEvent{{Data: []byte("a\nb\nc")}}},
		{"id and retry ignored", "id: 7\nretry: 100\ndata: a\nid: 8\n\n", []sseEvent{{Data: []byte("a")}}},
		{"unknown field ignored", "foo: bar\ndata: a\n\n", []sseEvent{{Data: []byte("a")}}},
		{"blank lines alone dispatch nothing", "\n\n\n", nil},
		{"cut off by EOF", "data: a\n\ndata: b\n", []sseEvent{{Data: []byte("a")}}},
		{"cut off without line end", "data: a\n\ndata: b", []sseEvent{{Data: []byte("a")}}},
		{"several events", "data: 1\n\ndata: 2\n\n: c\n\ndata: 3\n\n", []sseEvent{{Data: []byte("1")}, {Data: []byte("2")}, {Data: []byte("3")}}},
		{"line over 64 KiB", "data: " + long + "\n\ndata: after\n\n", []sseEvent{{Data: []byte(long)}, {Data: []byte("after")}}},
		{"line of several MiB", "data: " + huge + "\r\n\r\n", []sseEvent{{Data: []byte(huge)}}},
		{"empty stream", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "one byte", "half"} {
				var r io.Reader = strings.NewReader(tt.in)
				switch mode {
				case "one byte":
					if len(tt.in) > 1<<20 {
						continue // byte by byte through MiB is slow for nothing more
					}
					r = iotest.OneByteReader(r)
				case "half":
					r = iotest.HalfReader(r)
				}
				got, err := readSSEEvents(newSSEReader(r))
				if !errors.Is(err, io.EOF) {
					t.Fatalf("%s: err = %v, want io.EOF", mode, err)
				}
				if !sseEventsEqual(got, tt.want) {
					t.Errorf("%s: events = %s, want %s", mode, showSSEEvents(got), showSSEEvents(tt.want))
				}
			}
		})
	}
}

func sseEventsEqual(a, b []sseEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

func showSSEEvents(evs []sseEvent) string {
	var b strings.Builder
	b.WriteString("[")
	for i, ev := range evs {
		if i > 0 {
			b.WriteString(" ")
		}
		d := string(ev.Data)
		if len(d) > 40 {
			d = d[:40] + "…"
		}
		b.WriteString("{" + ev.Type + "|" + d + "}")
	}
	return b.String() + "]"
}

// An event split across many tiny reads is one event, and many events in one read are many.
func TestSSEReaderSplitReads(t *testing.T) {
	var in strings.Builder
	var want []sseEvent
	for i := range 50 {
		d := strings.Repeat(string(rune('a'+i%26)), i*37)
		in.WriteString("data: " + d + "\r\n")
		in.WriteString("data: second line\r\n\r\n")
		want = append(want, sseEvent{Data: []byte(d + "\nsecond line")})
	}
	for name, r := range map[string]io.Reader{
		"one byte": iotest.OneByteReader(strings.NewReader(in.String())),
		"one read": strings.NewReader(in.String()),
	} {
		got, err := readSSEEvents(newSSEReader(r))
		if !errors.Is(err, io.EOF) {
			t.Fatalf("%s: err = %v", name, err)
		}
		if !sseEventsEqual(got, want) {
			t.Errorf("%s: got %d events, want %d", name, len(got), len(want))
		}
	}
}

// A reader error other than EOF is returned as it is.
func TestSSEReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := newSSEReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)))
	got, err := readSSEEvents(r)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if !sseEventsEqual(got, []sseEvent{{Data: []byte("a")}}) {
		t.Errorf("events = %s", showSSEEvents(got))
	}
}

func TestSSEReaderTooLarge(t *testing.T) {
	t.Parallel()
	t.Run("one line at the real limit", func(t *testing.T) {
		// A line exactly at the limit is read; one byte more is refused.
		at := io.MultiReader(strings.NewReader("data: "), &byteRepeater{'z', maxEventBytes}, strings.NewReader("\n\n"))
		ev, err := newSSEReader(at).next()
		if err != nil || len(ev.Data) != maxEventBytes {
			t.Fatalf("at the limit: err = %v", err)
		}
		over := io.MultiReader(strings.NewReader("data: "), &byteRepeater{'z', maxEventBytes + 1}, strings.NewReader("\n\n"))
		if _, err := newSSEReader(over).next(); !errors.Is(err, errEventTooLarge) {
			t.Fatalf("over the limit: err = %v, want errEventTooLarge", err)
		}
	})
	t.Run("a line without end never ends", func(t *testing.T) {
		// The reader gives up on a line that passes the limit before its end arrives, rather than buffering on.
		endless := io.MultiReader(strings.NewReader("data: "), &byteRepeater{'z', 4 * maxEventBytes})
		if _, err := newSSEReader(endless).next(); !errors.Is(err, errEventTooLarge) {
			t.Fatalf("err = %v, want errEventTooLarge", err)
		}
	})
	for _, tt := range []struct{ name, in string }{
		{"one line", "data: " + strings.Repeat("a", 101) + "\n\n"},
		{"many lines", strings.Repeat("data: "+strings.Repeat("a", 20)+"\n", 6) + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newSSEReader(strings.NewReader(tt.in))
			r.max = 100
			if _, err := r.next(); !errors.Is(err, errEventTooLarge) {
				t.Fatalf("err = %v, want errEventTooLarge", err)
			}
		})
	}
	t.Run("at a small limit", func(t *testing.T) {
		r := newSSEReader(strings.NewReader("data: " + strings.Repeat("a", 100) + "\n\n"))
		r.max = 100
		if ev, err := r.next(); err != nil || len(ev.Data) != 100 {
			t.Fatalf("err = %v", err)
		}
	})
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: hello\n\n",
		"data:a\r\ndata: b\r\n\r\n",
		"event: error\rdata: {}\r\r",
		": comment\n\ndata: x",
		"id: 1\nretry: 5\ndata: y\n\n\n",
		"hello\nworld",
		"\r\n\r",
		"",
		"data: \r\ndata:\n\n",
		"a\nb\n\nc",
		"\n:\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// Arbitrary bytes: no panic, and the reader ends.
		for _, max := range []int{maxEventBytes, 16} {
			r := newSSEReader(iotest.HalfReader(bytes.NewReader(in)))
			r.max = max
			for n := 0; ; n++ {
				ev, err := r.next()
				if err != nil {
					break
				}
				if n > len(in) {
					t.Fatalf("more events than bytes")
				}
				if len(ev.Data) > max {
					t.Fatalf("event of %d bytes past the limit %d", len(ev.Data), max)
				}
			}
		}

		// The input as a list of data strings without line ends: written as events, they read back as they were.
		values := strings.Split(strings.NewReplacer("\r", "").Replace(string(in)), "\n")
		var stream strings.Builder
		for _, v := range values {
			stream.WriteString("data: " + v + "\n\n")
		}
		got, err := readSSEEvents(newSSEReader(iotest.OneByteReader(strings.NewReader(stream.String()))))
		if !errors.Is(err, io.EOF) {
			t.Fatalf("err = %v", err)
		}
		if len(got) != len(values) {
			t.Fatalf("read %d events, wrote %d", len(got), len(values))
		}
		for i, v := range values {
			if got[i].Type != "" || string(got[i].Data) != v {
				t.Fatalf("event %d = %q (type %q), want %q", i, got[i].Data, got[i].Type, v)
			}
		}
	})
}

func TestSSEWriter(t *testing.T) {
	rec := httptest.NewRecorder()
	w := newSSEWriter(rec)
	if err := w.event("", []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.event("error", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.Header().Get("Content-Type"), "text/event-stream"; got != want {
		t.Errorf("Content-Type = %q, want %q", got, want)
	}
	if got, want := rec.Header().Get("Cache-Control"), "no-cache"; got != want {
		t.Errorf("Cache-Control = %q, want %q", got, want)
	}
	if rec.Code != 200 || !rec.Flushed {
		t.Errorf("code = %d, flushed = %v", rec.Code, rec.Flushed)
	}
	want := "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\nevent: error\ndata: {}\n\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("body = %q, want %q", got, want)
	}
	// What the writer writes, the reader reads.
	got, err := readSSEEvents(newSSEReader(strings.NewReader(rec.Body.String())))
	if !errors.Is(err, io.EOF) || !sseEventsEqual(got, []sseEvent{{Data: []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)}, {Type: "error", Data: []byte("{}")}}) {
		t.Errorf("read back %s, %v", showSSEEvents(got), err)
	}
}
