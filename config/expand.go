package config

import (
	"fmt"
	"strings"
)

// expand replaces each ${NAME} in s with the value of the environment variable NAME, and each $$ with a single $.
// A $ followed by anything else is kept as it is. used reports whether s referred to at least one variable.
// Every unset variable is named in the error; an unset variable is an error, a variable set to "" is not.
func expand(s string, env func(string) (string, bool)) (out string, used bool, err error) {
	if !strings.Contains(s, "$") {
		return s, false, nil
	}
	var (
		b     strings.Builder
		unset []string
	)
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", used, fmt.Errorf("unterminated ${ (write $$ for a literal $)")
			}
			name := s[i+2 : i+2+end]
			if !validEnvName(name) {
				return "", used, fmt.Errorf("invalid variable name %q in ${...} (write $$ for a literal $)", name)
			}
			used = true
			v, ok := env(name)
			if !ok {
				unset = appendOnce(unset, name)
			}
			b.WriteString(v)
			i += 2 + end
		default:
			b.WriteByte(c)
		}
	}
	switch len(unset) {
	case 0:
		return b.String(), used, nil
	case 1:
		return "", used, fmt.Errorf("environment variable %s is not set", unset[0])
	default:
		return "", used, fmt.Errorf("environment variables %s are not set", strings.Join(unset, ", "))
	}
}

// validEnvName reports whether name matches ^[A-Za-z_][A-Za-z0-9_]*$.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

func appendOnce(list []string, s string) []string {
	for _, v := range list {
		if v == s {
			return list
		}
	}
	return append(list, s)
}
