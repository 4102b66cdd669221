package host

import "testing"

func TestPlaceholders(t *testing.T) {
	if got := (Media{Type: "image", MIMEType: "image/png", Data: make([]byte, 68)}).Placeholder(); got != "[image: image/png, 68 bytes]" {
		t.Errorf("media placeholder = %q", got)
	}
	if got := Placeholder("audio", "", 3); got != "[audio: 3 bytes]" {
		t.Errorf("placeholder without a MIME type = %q", got)
	}
	for s, want := range map[string]bool{
		Placeholder("blob", "image/png", 68): true,
		Placeholder("blob", "", 0):           true,
		Placeholder("image", "image/png", 1): false,
		"[blob: notes":                       false,
	} {
		if got := IsBlobPlaceholder(s); got != want {
			t.Errorf("IsBlobPlaceholder(%q) = %v, want %v", s, got, want)
		}
	}

	tests := []struct {
		line, uri, name string
		ok              bool
	}{
		{LinkPlaceholder("Report", "file:///r.pdf"), "file:///r.pdf", "Report", true},
		{LinkPlaceholder("", "file:///r.pdf"), "file:///r.pdf", "", true},
		{LinkPlaceholder("Two words", "https://x/y"), "https://x/y", "Two words", true},
		{LinkPlaceholder("Report", "file:///r.pdf"), "file:///other", "", false},
		{"[image: image/png, 68 bytes]", "file:///r.pdf", "", false},
	}
	for _, tt := range tests {
		name, ok := ParseLinkPlaceholder(tt.line, tt.uri)
		if name != tt.name || ok != tt.ok {
			t.Errorf("ParseLinkPlaceholder(%q, %q) = %q, %v; want %q, %v", tt.line, tt.uri, name, ok, tt.name, tt.ok)
		}
	}
}
