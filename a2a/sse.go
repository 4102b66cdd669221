package a2a

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Server-sent events, as the streaming methods use them.

// maxEventBytes bounds one event's data, so that a peer cannot make the reader hold without limit. Lines are read
// whole whatever their length up to it.
const maxEventBytes = 16 << 20

// sseEvent is one dispatched event: its type ("" for the default "message") and its data lines joined by "\n".
type sseEvent struct {
	Type string
	Data []byte
}

// sseReader reads events from a text/event-stream. It takes lines of any length up to maxEventBytes, ending in
// "\n", "\r\n" or "\r"; "data:" with or without the space after the colon; multi-line data; comments (lines
// starting with ":"); and the event type. id and retry fields are read and ignored: A2A streams do not resume.
type sseReader struct {
	r       io.Reader
	buf     []byte // buf[start:] is read and not yet consumed
	start   int
	scanned int  // bytes of buf[start:] known to hold no end of line
	skipLF  bool // the last line ended in "\r": a "\n" right after it belongs to that end
	eof     bool
	max     int
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: r, buf: make([]byte, 0, 32<<10), max: maxEventBytes}
}

// errEventTooLarge is returned for an event whose data passes the bound.
var errEventTooLarge = errors.New("event larger than the limit")

// next returns the next event with data. At the end of the stream it returns io.EOF; an event cut off by the end
// is dropped, as the format says.
func (s *sseReader) next() (*sseEvent, error) {
	var (
		data    []byte
		hasData bool
		typ     string
	)
	for {
		line, err := s.line()
		if err != nil {
			return nil, err // io.EOF included: an event the stream ended in is not dispatched
		}
		if len(line) == 0 { // a blank line dispatches
			if hasData {
				return &sseEvent{Type: typ, Data: data}, nil
			}
			typ = ""
			continue
		}
		if line[0] == ':' {
			continue // a comment, used as a keep-alive
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			if len(data)+len(value) > s.max {
				return nil, fmt.Errorf("%w (%d bytes)", errEventTooLarge, s.max)
			}
			data = append(data, value...)
			hasData = true
		case "event":
			typ = string(value)
		}
	}
}

// line returns the next line without its end. The line is valid until the next call. A last line without an end is
// returned as a line, then io.EOF.
func (s *sseReader) line() ([]byte, error) {
	for {
		data := s.buf[s.start:]
		if s.skipLF && len(data) > 0 {
			s.skipLF = false
			if data[0] == '\n' {
				s.start++
				data = data[1:]
			}
		}
		if i := bytes.IndexAny(data[s.scanned:], "\r\n"); i >= 0 {
			i += s.scanned
			s.start += i + 1
			s.scanned = 0
			if data[i] == '\r' {
				s.skipLF = true
			}
			return data[:i], nil
		}
		s.scanned = len(data)
		if s.eof {
			s.start += len(data)
			s.scanned = 0
			if len(data) > 0 {
				return data, nil
			}
			return nil, io.EOF
		}
		if len(data) > s.max+64 {
			return nil, fmt.Errorf("%w (%d bytes)", errEventTooLarge, s.max)
		}
		if err := s.fill(); err != nil {
			return nil, err
		}
	}
}

// fill reads more input after what is left in buf, moving it to the front and growing buf when needed.
func (s *sseReader) fill() error {
	if s.start > 0 {
		n := copy(s.buf, s.buf[s.start:])
		s.buf, s.start = s.buf[:n], 0
	}
	if cap(s.buf)-len(s.buf) < 4<<10 {
		s.buf = append(make([]byte, 0, 2*cap(s.buf)+(4<<10)), s.buf...)
	}
	n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
	s.buf = s.buf[:len(s.buf)+n]
	switch {
	case errors.Is(err, io.EOF):
		s.eof = true
	case err != nil:
		return err
	}
	return nil
}

// sseWriter writes events to an HTTP response, flushing each.
type sseWriter struct {
	w       http.ResponseWriter
	flusher http.Flusher
	started bool
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	f, _ := w.(http.Flusher)
	return &sseWriter{w: w, flusher: f}
}

// start sends the stream's headers.
func (s *sseWriter) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

// event writes one event of type typ ("" for none) whose data is one line of JSON.
func (s *sseWriter) event(typ string, data []byte) error {
	s.start()
	var b bytes.Buffer
	if typ != "" {
		b.WriteString("event: ")
		b.WriteString(typ)
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := s.w.Write(b.Bytes()); err != nil {
		return err
	}
	if s.flusher != nil {
		s.flusher.Flush()
	}
	return nil
}
