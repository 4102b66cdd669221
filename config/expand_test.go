package config

import "testing"

func TestExpand(t *testing.T) {
	env := envOf(map[string]string{"A": "x", "EMPTY": "", "B_2": "y", "DOLLAR": "$"})
	tests := []struct {
		in, want string
		used     bool
		err      string
	}{
		{in: "plain", want: "plain"},
		{in: "", want: ""},
		{in: "${A}", want: "x", used: true},
		{in: "a${A}b${B_2}c", want: "axbyc", used: true},
		{in: "${EMPTY}", want: "", used: true},
		{in: "$$", want: "$"},
		{in: "$${A}", want: "${A}"},
		{in: "$$$${A}", want: "$${A}"},
		{in: "$$${A}", want: "$x", used: true},
		{in: "cost $5, $A, trailing $", want: "cost $5, $A, trailing $"},
		{in: "${DOLLAR}{A}", want: "${A}", used: true}, // a value is not expanded again
		{in: "${NOPE}", used: true, err: "environment variable NOPE is not set"},
		{in: "${NOPE} ${A} ${NOPE2} ${NOPE}", used: true, err: "environment variables NOPE, NOPE2 are not set"},
		{in: "${}", err: `invalid variable name "" in ${...} (write $$ for a literal $)`},
		{in: "${1A}", err: `invalid variable name "1A" in ${...} (write $$ for a literal $)`},
		{in: "${A-B}", err: `invalid variable name "A-B" in ${...} (write $$ for a literal $)`},
		{in: "${A", err: "unterminated ${ (write $$ for a literal $)"},
	}
	for _, tc := range tests {
		got, used, err := expand(tc.in, env)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("expand(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want || used != tc.used {
			t.Errorf("expand(%q) = %q, %v, %v; want %q, %v", tc.in, got, used, err, tc.want, tc.used)
		}
	}
}
