package host

import (
	"fmt"
	"strings"
)

// Placeholders are the lines a Result's Text holds for content the model cannot read: binary data, kept in
// Result.Media or summarised in a Reference, and resource links, kept in Result.References. A tool source writes
// them; whoever turns a Result back into the source's own kind of content (a gateway) recognises them with the
// functions below and puts the content back in their place.

// Placeholder returns the line for binary content of kind ("image", "audio", "blob"), e.g.
// "[image: image/png, 1234 bytes]".
func Placeholder(kind, mimeType string, size int) string {
	if mimeType == "" {
		return fmt.Sprintf("[%s: %d bytes]", kind, size)
	}
	return fmt.Sprintf("[%s: %s, %d bytes]", kind, mimeType, size)
}

// Placeholder returns the line a Result's Text holds for m.
func (m Media) Placeholder() string { return Placeholder(m.Type, m.MIMEType, len(m.Data)) }

// IsBlobPlaceholder reports whether s is the placeholder of a binary resource, e.g. "[blob: image/png, 68 bytes]".
func IsBlobPlaceholder(s string) bool {
	return strings.HasPrefix(s, "[blob: ") && strings.HasSuffix(s, " bytes]")
}

// LinkPlaceholder returns the line for a link to the resource at uri named name (which may be empty), e.g.
// "[resource link: Report file:///r.pdf]".
func LinkPlaceholder(name, uri string) string {
	return "[resource link: " + strings.TrimSpace(name+" "+uri) + "]"
}

// ParseLinkPlaceholder returns the name in line when line is the placeholder of a link to uri.
func ParseLinkPlaceholder(line, uri string) (name string, ok bool) {
	rest, ok := strings.CutPrefix(line, "[resource link: ")
	if !ok {
		return "", false
	}
	if rest == uri+"]" {
		return "", true
	}
	if name, ok := strings.CutSuffix(rest, " "+uri+"]"); ok {
		return name, true
	}
	return "", false
}
