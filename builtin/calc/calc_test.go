package calc

import (
	"strings"
	"testing"
)

// TestEvaluate: exact where it can be (decimal fractions, big integers, rationals), approximate to the digits asked
// where a step is irrational.
func TestEvaluate(t *testing.T) {
	tests := []struct {
		expr, want string
		exact      bool
		fraction   string
	}{
		{"0.1 + 0.2", "0.3", true, ""},
		{"2^100", "1267650600228229401496703205376", true, ""},
		{"10/4", "2.5", true, ""},
		{"1/3", "0.33333333333333333333333333333333333333333333333333", true, "1/3"},
		{"2/3", "0.66666666666666666666666666666666666666666666666667", true, "2/3"},
		{"1/7*7", "1", true, ""},
		{"1 + 2 * 3", "7", true, ""},
		{"(1 + 2) * 3", "9", true, ""},
		{"2 * 3 ^ 2", "18", true, ""},
		{"-2^2", "-4", true, ""},
		{"(-2)^2", "4", true, ""},
		{"2^-2", "0.25", true, ""},
		{"2^3^2", "512", true, ""},
		{"--3", "3", true, ""},
		{"+3 - -3", "6", true, ""},
		{"7 % 3", "1", true, ""},
		{"-7 % 3", "-1", true, ""},
		{"7.5 % 2", "1.5", true, ""},
		{"1e3 + 2.5E-3", "1000.0025", true, ""},
		{".5 + 1.", "1.5", true, ""},
		{"1e-30", "0.000000000000000000000000000001", true, ""},
		{"3 × 4 ÷ 2 − 1", "5", true, ""},
		{"sqrt(16)", "4", true, ""},
		{"sqrt(0.25)", "0.5", true, ""},
		{"sqrt(2)", "1.4142135623730950488016887242096980785696718753769", false, ""},
		{"abs(-3.5)", "3.5", true, ""},
		{"round(2.5)", "3", true, ""},
		{"round(-2.5)", "-3", true, ""},
		{"round(2.345, 2)", "2.35", true, ""},
		{"round(1234, -2)", "1200", true, ""},
		{"round(pi, 4)", "3.1416", true, ""},
		{"floor(-2.5)", "-3", true, ""},
		{"ceil(2.1)", "3", true, ""},
		{"min(3, 1, 2)", "1", true, ""},
		{"max(1, 2.5, -1)", "2.5", true, ""},
		{"MAX(1, pi)", "3.1415926535897932384626433832795028841971693993751", false, ""},
		{"pi", "3.1415926535897932384626433832795028841971693993751", false, ""},
		{"e", "2.7182818284590452353602874713526624977572470937", false, ""}, // ...4709369995: the zeros go
		{"pi^2", "9.8696044010893586188344909998761511353136994072408", false, ""},
		{"sqrt(2)^2", "2", false, ""},
		{"sqrt(2) * 1e60", "1.4142135623730950488016887242096980785696718753769e+60", false, ""},
		{"0 * pi", "0", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			v, err := Evaluate(tt.expr, 50)
			if err != nil {
				t.Fatal(err)
			}
			got, finite := v.Decimal(50)
			if got != tt.want || v.Exact() != tt.exact || finite != (tt.exact && tt.fraction == "") {
				t.Errorf("= %s (exact %v, finite %v), want %s (exact %v)", got, v.Exact(), finite, tt.want, tt.exact)
			}
			// The fraction is what says an exact value whose decimal does not end; an approximation has none.
			if tt.fraction != "" && v.Fraction() != tt.fraction || !v.Exact() && v.Fraction() != "" {
				t.Errorf("fraction %q, want %q", v.Fraction(), tt.fraction)
			}
		})
	}
}

func TestEvaluateErrors(t *testing.T) {
	tests := []struct{ expr, want string }{
		{`1/0`, `division by zero at position 2`},
		{`5 % (2-2)`, `division by zero at position 3`},
		{`0^-1`, `division by zero (0 to a negative power) at position 2`},
		{`(1+2`, `missing ")" to close the "(" at position 1`},
		{`(1 2)`, `unexpected "2" where the "(" at position 1 should be closed at position 4`},
		{`1+2)`, `unexpected ")" with no "(" before it at position 4`},
		{`1 +`, `the expression ends where a number was expected at position 4`},
		{`1 * * 2`, `unexpected "*" where a number was expected at position 5`},
		{`2 3`, `unexpected "3" at position 3`},
		{`foo(1)`, `unknown name "foo"; functions: abs, ceil, floor, max, min, round, sqrt; constants: pi, e at position 1`},
		{`x + 1`, `unknown name "x"`},
		{`sqrt 4`, `sqrt needs its arguments in parentheses, as in sqrt(2) at position 6`},
		{`sqrt(1, 2)`, `sqrt takes 1 argument, not 2 at position 1`},
		{`round(1, 2, 3)`, `round takes 1 or 2 arguments (a number and the decimal places), not 3`},
		{`round(1, 0.5)`, `round: the decimal places must be a whole number between -1000 and 1000`},
		{`sqrt(-4)`, `sqrt: the square root of a negative number is not real at position 1`},
		{`2^0.5`, `the exponent must be a whole number (for a square root use sqrt) at position 2`},
		{`2^100000000`, `the result would have more than 39456 digits`},
		{`2^2^2^2^2^2`, `the result would have more than 39456 digits`},
		{`pi^100000000`, `the result would have more than 39456 digits`},
		{`floor((pi*1e4000)^1000)`, `the result would have more than 39456 digits`},
		{`pi(2)`, `pi is a constant, not a function at position 1`},
		{`1e99999`, `the exponent of "1e99999" is out of range (at most 4000) at position 1`},
		{`1.2.3`, `"1.2.3" is not a number at position 1`},
		{`1e`, `unexpected "e" at position 2`},
		{`2 $ 3`, `unexpected '$' at position 3`},
		{`import os`, `unknown name "import"`},
		{strings.Repeat("1+", 600) + "1", `the expression has 1201 characters; at most 1000 are allowed`},
		{strings.Repeat("(", 150) + "1" + strings.Repeat(")", 150), `the expression nests deeper than 100 levels`},
		{strings.Repeat("-", 150) + "1", `the expression nests deeper than 100 levels`},
		{"", "the expression is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			v, err := Evaluate(tt.expr, 50)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Evaluate(%q) = %v, %v; want an error containing %q", tt.expr, v, err, tt.want)
			}
		})
	}
}

func TestEvaluateDigits(t *testing.T) {
	for _, d := range []int{0, -1, MaxDigits + 1} {
		if _, err := Evaluate("1", d); err == nil || !strings.Contains(err.Error(), "calc: digits must be between 1 and 1000") {
			t.Errorf("Evaluate with %d digits: %v", d, err)
		}
	}
	// A high precision gets every digit right: π's significant digits 991 to 1003 are 9216420198938, so the 1000th
	// is rounded up to 9.
	v, err := Evaluate("pi", MaxDigits)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := v.Decimal(MaxDigits); !strings.HasSuffix(s, "3001927876611195909216420199") {
		t.Errorf("pi to 1000 digits ends %q", s[len(s)-30:])
	}
}

func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{"0.1 + 0.2", "2^100", "1/3", "-2^-2", "sqrt(2)*pi", "round(e, 3) % 1", "max(1, 2, 3)",
		"((1))", "1e-5", "7 % -3", "2^2^2", "floor(-0.5)+ceil(.5)", "1 +", "(", "sqrt(", "min(,)", "9^9^9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		v, err := Evaluate(expr, 30)
		if err != nil {
			return
		}
		// An exact result with a finite decimal evaluates back to itself.
		s, finite := v.Decimal(30)
		if !v.Exact() || !finite {
			return
		}
		again, err := Evaluate(s, 30)
		if err != nil {
			if strings.Contains(err.Error(), "characters") {
				return // an exact result may be longer than an expression may be
			}
			t.Fatalf("%q = %s, which does not evaluate: %v", expr, s, err)
		}
		if !again.Exact() || again.r.Cmp(v.r) != 0 {
			t.Fatalf("%q = %s, which evaluates to %v", expr, s, again.r)
		}
	})
}
