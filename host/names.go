package host

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxToolNameLen is the longest tool name OpenAI-compatible APIs and Claude Desktop accept.
const MaxToolNameLen = 64

// ValidToolName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$.
func ValidToolName(name string) bool {
	if len(name) == 0 || len(name) > MaxToolNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return false
		}
	}
	return true
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ToolName builds a final tool name from a source prefix and the tool's own name: "<prefix>_<name>", or the name
// alone when prefix is empty. Characters outside [a-zA-Z0-9_-] become '_'. A name longer than 64 characters is cut
// and ends in '_' and 8 hex digits of a hash of the uncut name, so it stays stable and distinct across restarts.
// It is the only name sanitiser of the project: every edge names its tools through it.
func ToolName(prefix, name string) string {
	full := name
	if prefix != "" {
		full = prefix + "_" + name
	}
	var b strings.Builder
	b.Grow(len(full))
	for i := 0; i < len(full); i++ {
		if nameByte(full[i]) {
			b.WriteByte(full[i])
		} else {
			b.WriteByte('_')
		}
	}
	out := b.String()
	if out != "" && len(out) <= MaxToolNameLen {
		return out
	}
	sum := sha256.Sum256([]byte(full))
	suffix := "_" + hex.EncodeToString(sum[:4])
	if len(out) > MaxToolNameLen-len(suffix) {
		out = out[:MaxToolNameLen-len(suffix)]
	}
	if out == "" {
		out = "tool"
	}
	return out + suffix
}
