package otlp

import (
	"encoding/binary"
	"errors"
	"math"
)

// The protobuf wire format, as much of it as OTLP needs: the encoders append to a byte slice the caller reuses,
// and emit the fields of a message in the protobuf runtime's order, by field number but the members of a oneof
// last, so that what they write is byte for byte what proto.Marshal writes for the same message.

// Wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func appendTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire))
}

// appendVarint appends a varint field (uint32, uint64, int64, bool, enum) unless it is zero, as proto3 does for a
// field without presence.
func appendVarint(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(appendTag(b, field, wireVarint), v)
}

// appendSint32 appends a zigzag-encoded sint32 field unless it is zero.
func appendSint32(b []byte, field int, v int32) []byte {
	return appendVarint(b, field, uint64(uint32(v<<1)^uint32(v>>31)))
}

func appendFixed64(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return appendFixed64Always(b, field, v)
}

// appendFixed64Always appends a fixed64 field even when it is zero: a member of a oneof, or an optional field.
func appendFixed64Always(b []byte, field int, v uint64) []byte {
	return binary.LittleEndian.AppendUint64(appendTag(b, field, wireFixed64), v)
}

func appendFixed32(b []byte, field int, v uint32) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint32(appendTag(b, field, wireFixed32), v)
}

// appendDouble appends a double field unless its bits are zero (-0 is sent, as the protobuf runtime does).
func appendDouble(b []byte, field int, v float64) []byte {
	return appendFixed64(b, field, math.Float64bits(v))
}

func appendString(b []byte, field int, s string) []byte {
	if s == "" {
		return b
	}
	return appendStringAlways(b, field, s)
}

// appendStringAlways appends a string field even when it is empty: a member of a oneof.
func appendStringAlways(b []byte, field int, s string) []byte {
	b = binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, field int, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = binary.AppendUvarint(appendTag(b, field, wireBytes), uint64(len(v)))
	return append(b, v...)
}

// beginMessage appends the tag of an embedded message and a one-byte placeholder for its length, and returns where
// the message starts; endMessage, given that, writes the length. Messages nest: each end matches the latest begin.
func beginMessage(b []byte, field int) ([]byte, int) {
	b = append(appendTag(b, field, wireBytes), 0)
	return b, len(b)
}

// endMessage writes the length of the message that starts at start. Most messages are shorter than 128 bytes and
// fit the placeholder; a longer one is moved up by the bytes its length needs besides.
func endMessage(b []byte, start int) []byte {
	n := len(b) - start
	if n < 0x80 {
		b[start-1] = byte(n)
		return b
	}
	var lenBuf [binary.MaxVarintLen64]byte
	size := binary.PutUvarint(lenBuf[:], uint64(n))
	for range size - 1 {
		b = append(b, 0)
	}
	copy(b[start-1+size:], b[start:start+n])
	copy(b[start-1:], lenBuf[:size])
	return b
}

// errTruncated is the error of a message that ends inside a field.
var errTruncated = errors.New("protobuf message truncated")

// field is one field read from a message: its number and wire type, and its value, an integer for the varint and
// fixed types or the bytes of a length-delimited one.
type field struct {
	num  int
	wire int
	n    uint64
	data []byte
}

// nextField reads the first field of b and returns it with what follows it. Groups, which OTLP does not use, are
// an error.
func nextField(b []byte) (field, []byte, error) {
	tag, k := binary.Uvarint(b)
	if k <= 0 {
		return field{}, nil, errTruncated
	}
	b = b[k:]
	f := field{num: int(tag >> 3), wire: int(tag & 7)}
	switch f.wire {
	case wireVarint:
		if f.n, k = binary.Uvarint(b); k <= 0 {
			return field{}, nil, errTruncated
		}
		return f, b[k:], nil
	case wireFixed64:
		if len(b) < 8 {
			return field{}, nil, errTruncated
		}
		f.n = binary.LittleEndian.Uint64(b)
		return f, b[8:], nil
	case wireFixed32:
		if len(b) < 4 {
			return field{}, nil, errTruncated
		}
		f.n = uint64(binary.LittleEndian.Uint32(b))
		return f, b[4:], nil
	case wireBytes:
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return field{}, nil, errTruncated
		}
		f.data = b[k : k+int(n)]
		return f, b[k+int(n):], nil
	}
	return field{}, nil, errors.New("protobuf wire type not supported")
}

// fields calls fn with each field of the message b, in order, and stops at the first error.
func fields(b []byte, fn func(field) error) error {
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
		b = rest
	}
	return nil
}
