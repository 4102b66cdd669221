// Package calc evaluates arithmetic expressions in arbitrary precision, for the calculate tool: exactly on
// rationals (0.1 + 0.2 is 0.3, 2^100 is exact), approximately to a given number of significant digits only where a
// step is irrational (sqrt, pi, e).
//
// Every expression is bounded in length, nesting and the size of its results, so that no input makes an
// evaluation spend more than milliseconds or megabytes. It imports only the standard library.
package calc

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxDigits bounds the significant digits of an approximation, and the decimal places round takes.
const MaxDigits = 1000

// maxExpressionRunes, maxDepth and maxResultBits bound the work one expression can ask for.
const (
	maxExpressionRunes = 1000
	maxDepth           = 100
	maxResultBits      = 1 << 17 // about 39,000 decimal digits
)

// Value is a number: exact (r) or an approximation (f) once an irrational step was taken.
type Value struct {
	r *big.Rat
	f *big.Float
}

// Exact says whether v is exact: no irrational step was taken.
func (v Value) Exact() bool { return v.f == nil }

// Decimal writes v in decimal: all of it when v is exact and its expansion ends (finite true), else rounded to
// digits significant digits.
func (v Value) Decimal(digits int) (s string, finite bool) {
	if !v.Exact() {
		return formatFloat(v.f, digits), false
	}
	return formatRat(v.r, digits)
}

// Fraction is an exact v as a fraction ("1/3", or an integer), and "" for an approximation.
func (v Value) Fraction() string {
	if !v.Exact() {
		return ""
	}
	return v.r.RatString()
}

// float is v as a float of prec bits.
func (v Value) float(prec uint) *big.Float {
	if v.f != nil {
		return new(big.Float).SetPrec(prec).Set(v.f)
	}
	return new(big.Float).SetPrec(prec).SetRat(v.r)
}

// rat is v exactly as a rational: for an approximation, the binary value it holds.
func (v Value) rat() *big.Rat {
	if v.f != nil {
		r, _ := v.f.Rat(nil)
		return r
	}
	return v.r
}

func (v Value) sign() int {
	if v.f != nil {
		return v.f.Sign()
	}
	return v.r.Sign()
}

func (v Value) cmp(w Value, prec uint) int {
	if v.Exact() && w.Exact() {
		return v.r.Cmp(w.r)
	}
	return v.float(prec).Cmp(w.float(prec))
}

// calcError is an error at a position of the expression (1-based, in characters; 0 when none applies).
type calcError struct {
	pos int
	msg string
}

func (e *calcError) Error() string {
	if e.pos > 0 {
		return fmt.Sprintf("%s at position %d", e.msg, e.pos)
	}
	return e.msg
}

// token is a lexeme of an expression.
type token struct {
	kind byte // 'n' number, 'i' identifier, an operator or parenthesis as itself, 0 the end
	text string
	pos  int
}

func tokenize(expr string) ([]token, error) {
	var toks []token
	rs := []rune(expr)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r >= '0' && r <= '9' || r == '.':
			j := i
			for j < len(rs) && (rs[j] >= '0' && rs[j] <= '9' || rs[j] == '.') {
				j++
			}
			if j < len(rs) && (rs[j] == 'e' || rs[j] == 'E') {
				k := j + 1
				if k < len(rs) && (rs[k] == '+' || rs[k] == '-') {
					k++
				}
				if k < len(rs) && rs[k] >= '0' && rs[k] <= '9' {
					for j = k; j < len(rs) && rs[j] >= '0' && rs[j] <= '9'; j++ {
					}
				}
			}
			toks = append(toks, token{'n', string(rs[i:j]), i + 1})
			i = j
		case r == '_' || unicode.IsLetter(r):
			j := i
			for j < len(rs) && (rs[j] == '_' || unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) {
				j++
			}
			toks = append(toks, token{'i', string(rs[i:j]), i + 1})
			i = j
		case strings.ContainsRune("+-*/^%(),", r):
			toks = append(toks, token{byte(r), string(r), i + 1})
			i++
		case r == '×' || r == '÷' || r == '−':
			toks = append(toks, token{map[rune]byte{'×': '*', '÷': '/', '−': '-'}[r], string(r), i + 1})
			i++
		default:
			return nil, &calcError{i + 1, fmt.Sprintf("unexpected %q", r)}
		}
	}
	return append(toks, token{pos: len(rs) + 1}), nil
}

// Evaluate computes expr, approximating irrational steps to digits significant digits (1 to MaxDigits). Its errors
// are for the author of expr: they say what is wrong and where, in words, without a package prefix.
func Evaluate(expr string, digits int) (Value, error) {
	if digits < 1 || digits > MaxDigits {
		return Value{}, fmt.Errorf("calc: digits must be between 1 and %d, not %d", MaxDigits, digits)
	}
	if expr == "" {
		return Value{}, errors.New("the expression is empty")
	}
	if n := utf8.RuneCountInString(expr); n > maxExpressionRunes {
		return Value{}, fmt.Errorf("the expression has %d characters; at most %d are allowed", n, maxExpressionRunes)
	}
	toks, err := tokenize(expr)
	if err != nil {
		return Value{}, err
	}
	// Guard bits keep the digits shown correct after a chain of rounded steps.
	p := &parser{toks: toks, prec: uint(math.Ceil(float64(digits)*math.Log2(10))) + 64}
	v, err := p.expr()
	if err != nil {
		return Value{}, err
	}
	if t := p.peek(); t.kind != 0 {
		if t.kind == ')' {
			return Value{}, &calcError{t.pos, `unexpected ")" with no "(" before it`}
		}
		return Value{}, &calcError{t.pos, fmt.Sprintf("unexpected %q", t.text)}
	}
	return v, nil
}

// bounded is v, or errTooLarge when v is too large (or, approximated, too small) to compute with further.
func bounded(v Value, err error) (Value, error) {
	switch {
	case err != nil:
		return v, err
	case v.Exact() && v.r.Num().BitLen()+v.r.Denom().BitLen() > maxResultBits,
		!v.Exact() && (v.f.IsInf() || v.f.Sign() != 0 && absInt(int64(v.f.MantExp(nil))) > maxResultBits):
		return Value{}, errTooLarge
	}
	return v, nil
}

func absInt(n int64) int64 { return max(n, -n) }

var errTooLarge = &calcError{msg: fmt.Sprintf("the result would have more than %d digits", int(maxResultBits*math.Log10(2)))}

// parser is a recursive-descent parser that evaluates as it goes:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("-" | "+") unary | power
//	power   = primary [ "^" unary ]          (so -2^2 is -4 and 2^-1 is 0.5; ^ groups to the right)
//	primary = number | constant | function "(" expr { "," expr } ")" | "(" expr ")"
type parser struct {
	toks  []token
	i     int
	depth int
	prec  uint
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *parser) enter() error {
	if p.depth++; p.depth > maxDepth {
		return &calcError{p.peek().pos, fmt.Sprintf("the expression nests deeper than %d levels", maxDepth)}
	}
	return nil
}

func (p *parser) expr() (Value, error) {
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	defer func() { p.depth-- }()
	v, err := p.term()
	for err == nil && (p.peek().kind == '+' || p.peek().kind == '-') {
		op := p.next()
		var w Value
		if w, err = p.term(); err == nil {
			v, err = p.arith(op, v, w)
		}
	}
	return v, err
}

func (p *parser) term() (Value, error) {
	v, err := p.unary()
	for err == nil && strings.IndexByte("*/%", p.peek().kind) >= 0 {
		op := p.next()
		var w Value
		if w, err = p.unary(); err == nil {
			v, err = p.arith(op, v, w)
		}
	}
	return v, err
}

func (p *parser) unary() (Value, error) {
	if k := p.peek().kind; k == '-' || k == '+' {
		p.next()
		if err := p.enter(); err != nil {
			return Value{}, err
		}
		defer func() { p.depth-- }()
		v, err := p.unary()
		if err != nil || k == '+' {
			return v, err
		}
		if v.Exact() {
			return Value{r: new(big.Rat).Neg(v.r)}, nil
		}
		return Value{f: new(big.Float).Neg(v.f)}, nil
	}
	return p.power()
}

func (p *parser) power() (Value, error) {
	v, err := p.primary()
	if err != nil || p.peek().kind != '^' {
		return v, err
	}
	op := p.next()
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	defer func() { p.depth-- }()
	w, err := p.unary()
	if err != nil {
		return Value{}, err
	}
	return p.arith(op, v, w)
}

func (p *parser) primary() (Value, error) {
	t := p.next()
	switch t.kind {
	case 'n':
		return parseNumber(t)
	case '(':
		v, err := p.expr()
		if err != nil {
			return Value{}, err
		}
		if c := p.next(); c.kind != ')' {
			return Value{}, unclosed(c, t)
		}
		return v, nil
	case 'i':
		name := strings.ToLower(t.text)
		if c, ok := constants[name]; ok {
			if p.peek().kind == '(' {
				return Value{}, &calcError{t.pos, fmt.Sprintf("%s is a constant, not a function", name)}
			}
			return Value{f: c(p.prec)}, nil
		}
		f, ok := functions[name]
		if !ok {
			return Value{}, &calcError{t.pos, fmt.Sprintf("unknown name %q; functions: %s; constants: pi, e",
				t.text, functionNames)}
		}
		if p.peek().kind != '(' {
			return Value{}, &calcError{p.peek().pos, fmt.Sprintf(`%s needs its arguments in parentheses, as in %s(2)`, name, name)}
		}
		open := p.next()
		var args []Value
		for {
			v, err := p.expr()
			if err != nil {
				return Value{}, err
			}
			args = append(args, v)
			if c := p.next(); c.kind == ')' {
				break
			} else if c.kind != ',' {
				return Value{}, unclosed(c, open)
			}
		}
		if len(args) < f.min || f.max > 0 && len(args) > f.max {
			return Value{}, &calcError{t.pos, fmt.Sprintf("%s takes %s, not %d", name, f.arity, len(args))}
		}
		v, err := bounded(f.call(p, args))
		if err == errTooLarge {
			return Value{}, err
		}
		if err != nil {
			return Value{}, &calcError{t.pos, fmt.Sprintf("%s: %v", name, err)}
		}
		return v, nil
	case 0:
		return Value{}, &calcError{t.pos, "the expression ends where a number was expected"}
	}
	return Value{}, &calcError{t.pos, fmt.Sprintf("unexpected %q where a number was expected", t.text)}
}

// unclosed is the error of a "(" at open that found t where its ")" should be.
func unclosed(t, open token) error {
	if t.kind == 0 {
		return &calcError{msg: fmt.Sprintf(`missing ")" to close the "(" at position %d`, open.pos)}
	}
	return &calcError{t.pos, fmt.Sprintf(`unexpected %q where the "(" at position %d should be closed`, t.text, open.pos)}
}

// parseNumber reads a decimal number, with an exponent of at most a few thousand.
func parseNumber(t token) (Value, error) {
	mant, exp, hasExp := strings.Cut(strings.ToLower(t.text), "e")
	if strings.Count(mant, ".") > 1 || mant == "." || hasExp && (exp == "" || exp == "+" || exp == "-") {
		return Value{}, &calcError{t.pos, fmt.Sprintf("%q is not a number", t.text)}
	}
	if hasExp {
		var n int
		if _, err := fmt.Sscan(exp, &n); err != nil || n > 4000 || n < -4000 {
			return Value{}, &calcError{t.pos, fmt.Sprintf("the exponent of %q is out of range (at most 4000)", t.text)}
		}
	}
	r, ok := new(big.Rat).SetString(t.text)
	if !ok {
		return Value{}, &calcError{t.pos, fmt.Sprintf("%q is not a number", t.text)}
	}
	return Value{r: r}, nil
}

// arith applies the binary operator op.
func (p *parser) arith(op token, v, w Value) (Value, error) {
	return bounded(p.arith1(op, v, w))
}

func (p *parser) arith1(op token, v, w Value) (Value, error) {
	if (op.kind == '/' || op.kind == '%') && w.sign() == 0 {
		return Value{}, &calcError{op.pos, "division by zero"}
	}
	if op.kind == '^' {
		return p.pow(op, v, w)
	}
	if v.Exact() && w.Exact() {
		r := new(big.Rat)
		switch op.kind {
		case '+':
			r.Add(v.r, w.r)
		case '-':
			r.Sub(v.r, w.r)
		case '*':
			r.Mul(v.r, w.r)
		case '/':
			r.Quo(v.r, w.r)
		case '%':
			// Truncated, as in Go and C: the result has the sign of the dividend.
			q := new(big.Int).Quo(new(big.Int).Mul(v.r.Num(), w.r.Denom()), new(big.Int).Mul(v.r.Denom(), w.r.Num()))
			r.Sub(v.r, new(big.Rat).Mul(w.r, new(big.Rat).SetInt(q)))
		}
		return Value{r: r}, nil
	}
	a, b := v.float(p.prec), w.float(p.prec)
	switch op.kind {
	case '+':
		return Value{f: a.Add(a, b)}, nil
	case '-':
		return Value{f: a.Sub(a, b)}, nil
	case '*':
		return Value{f: a.Mul(a, b)}, nil
	case '/':
		return Value{f: a.Quo(a, b)}, nil
	}
	q := new(big.Float).SetPrec(p.prec).Quo(a, b)
	qi, _ := q.Int(nil) // truncated
	return Value{f: a.Sub(a, new(big.Float).SetPrec(p.prec).Mul(b, new(big.Float).SetInt(qi)))}, nil
}

// pow raises v to the integer w.
func (p *parser) pow(op token, v, w Value) (Value, error) {
	e := w.rat()
	if !e.IsInt() {
		return Value{}, &calcError{op.pos, "the exponent must be a whole number (for a square root use sqrt)"}
	}
	if !e.Num().IsInt64() || e.Num().Int64() > 1<<20 || e.Num().Int64() < -(1<<20) {
		return Value{}, errTooLarge
	}
	n := e.Num().Int64()
	if v.sign() == 0 && n < 0 {
		return Value{}, &calcError{op.pos, "division by zero (0 to a negative power)"}
	}
	abs := absInt(n)
	if v.Exact() {
		if bits := int64(v.r.Num().BitLen()+v.r.Denom().BitLen()) - 1; bits > 0 && bits*abs > maxResultBits {
			return Value{}, errTooLarge
		}
		num := new(big.Int).Exp(v.r.Num(), big.NewInt(abs), nil)
		den := new(big.Int).Exp(v.r.Denom(), big.NewInt(abs), nil)
		if n < 0 {
			num, den = den, num
		}
		return Value{r: new(big.Rat).SetFrac(num, den)}, nil
	}
	if absInt(int64(v.f.MantExp(nil)))*abs > maxResultBits {
		return Value{}, errTooLarge
	}
	result, base := new(big.Float).SetPrec(p.prec).SetInt64(1), v.float(p.prec)
	for k := abs; k > 0; k >>= 1 {
		if k&1 == 1 {
			result.Mul(result, base)
		}
		base.Mul(base, base)
	}
	if n < 0 {
		result.Quo(new(big.Float).SetPrec(p.prec).SetInt64(1), result)
	}
	return Value{f: result}, nil
}

type function struct {
	min, max int // max 0: any number
	arity    string
	call     func(p *parser, args []Value) (Value, error)
}

var functions = map[string]function{
	"sqrt":  {1, 1, "1 argument", (*parser).sqrt},
	"abs":   {1, 1, "1 argument", func(_ *parser, a []Value) (Value, error) { return absValue(a[0]), nil }},
	"round": {1, 2, "1 or 2 arguments (a number and the decimal places)", (*parser).round},
	"floor": {1, 1, "1 argument", func(p *parser, a []Value) (Value, error) { return p.integer(a[0], -1), nil }},
	"ceil":  {1, 1, "1 argument", func(p *parser, a []Value) (Value, error) { return p.integer(a[0], 1), nil }},
	"min":   {1, 0, "at least 1 argument", func(p *parser, a []Value) (Value, error) { return p.extreme(a, -1), nil }},
	"max":   {1, 0, "at least 1 argument", func(p *parser, a []Value) (Value, error) { return p.extreme(a, 1), nil }},
}

const functionNames = "abs, ceil, floor, max, min, round, sqrt"

var constants = map[string]func(prec uint) *big.Float{"pi": pi, "e": euler}

func absValue(v Value) Value {
	if v.Exact() {
		return Value{r: new(big.Rat).Abs(v.r)}
	}
	return Value{f: new(big.Float).Abs(v.f)}
}

func (p *parser) sqrt(a []Value) (Value, error) {
	v := a[0]
	if v.sign() < 0 {
		return Value{}, fmt.Errorf("the square root of a negative number is not real")
	}
	if v.Exact() {
		// The square root of a rational is rational when its numerator and denominator are squares.
		num, den := new(big.Int).Sqrt(v.r.Num()), new(big.Int).Sqrt(v.r.Denom())
		if new(big.Int).Mul(num, num).Cmp(v.r.Num()) == 0 && new(big.Int).Mul(den, den).Cmp(v.r.Denom()) == 0 {
			return Value{r: new(big.Rat).SetFrac(num, den)}, nil
		}
	}
	f := v.float(p.prec)
	return Value{f: f.Sqrt(f)}, nil
}

// round rounds half away from zero to a number of decimal places (0 by default; negative rounds to tens,
// hundreds...). The result is exact: it is the decimal shown.
func (p *parser) round(a []Value) (Value, error) {
	places := int64(0)
	if len(a) == 2 {
		d := a[1].rat()
		if !d.IsInt() || !d.Num().IsInt64() || d.Num().Int64() > MaxDigits || d.Num().Int64() < -MaxDigits {
			return Value{}, fmt.Errorf("the decimal places must be a whole number between -%d and %d", MaxDigits, MaxDigits)
		}
		places = d.Num().Int64()
	}
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(max(places, -places)), nil))
	x := new(big.Rat).Set(a[0].rat())
	if places >= 0 {
		x.Mul(x, scale)
	} else {
		x.Quo(x, scale)
	}
	// |x| + 1/2, truncated, with x's sign.
	half := new(big.Rat).SetFrac64(1, 2)
	n := new(big.Rat).Add(new(big.Rat).Abs(x), half)
	i := new(big.Int).Quo(n.Num(), n.Denom())
	if x.Sign() < 0 {
		i.Neg(i)
	}
	r := new(big.Rat).SetInt(i)
	if places >= 0 {
		r.Quo(r, scale)
	} else {
		r.Mul(r, scale)
	}
	return Value{r: r}, nil
}

// integer is floor (dir -1) or ceil (dir 1) of v, exact.
func (p *parser) integer(v Value, dir int) Value {
	r := v.rat()
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // Euclidean: q is the floor for a positive denominator
	if dir > 0 && m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return Value{r: new(big.Rat).SetInt(q)}
}

func (p *parser) extreme(a []Value, dir int) Value {
	best := a[0]
	for _, v := range a[1:] {
		if v.cmp(best, p.prec)*dir > 0 {
			best = v
		}
	}
	return best
}

// pi is π to prec bits, by Machin's formula: π = 16·atan(1/5) − 4·atan(1/239).
func pi(prec uint) *big.Float {
	prec += 16
	a := atanInv(5, prec)
	a.Mul(a, new(big.Float).SetInt64(16))
	b := atanInv(239, prec)
	b.Mul(b, new(big.Float).SetInt64(4))
	return a.Sub(a, b)
}

// atanInv is atan(1/x) to prec bits: the sum of (−1)^k / ((2k+1)·x^(2k+1)).
func atanInv(x int64, prec uint) *big.Float {
	sum := new(big.Float).SetPrec(prec)
	term := new(big.Float).SetPrec(prec).Quo(big.NewFloat(1).SetPrec(prec), new(big.Float).SetInt64(x)) // 1/x^(2k+1)
	x2 := new(big.Float).SetInt64(x * x)
	eps := new(big.Float).SetMantExp(big.NewFloat(1), -int(prec))
	t := new(big.Float).SetPrec(prec)
	for k := int64(0); ; k++ {
		t.Quo(term, new(big.Float).SetInt64(2*k+1))
		if t.Cmp(eps) < 0 {
			return sum
		}
		if k%2 == 0 {
			sum.Add(sum, t)
		} else {
			sum.Sub(sum, t)
		}
		term.Quo(term, x2)
	}
}

// euler is e to prec bits: the sum of 1/k!.
func euler(prec uint) *big.Float {
	prec += 16
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	eps := new(big.Float).SetMantExp(big.NewFloat(1), -int(prec))
	for k := int64(1); term.Cmp(eps) >= 0; k++ {
		term.Quo(term, new(big.Float).SetInt64(k))
		sum.Add(sum, term)
	}
	return sum
}

// formatRat writes r in decimal: all of it when its expansion ends (finite true), else rounded to digits
// significant digits.
func formatRat(r *big.Rat, digits int) (s string, finite bool) {
	d := new(big.Int).Set(r.Denom())
	places := 0
	for _, f := range []int64{2, 5} {
		n, m, bf := 0, new(big.Int), big.NewInt(f)
		for {
			q, rem := new(big.Int).QuoRem(d, bf, m)
			if rem.Sign() != 0 {
				break
			}
			d, n = q, n+1
		}
		places = max(places, n)
	}
	if d.Cmp(big.NewInt(1)) == 0 {
		return trimZeros(r.FloatString(places)), true
	}
	return formatFloat(new(big.Float).SetPrec(uint(float64(digits)*math.Log2(10))+64).SetRat(r), digits), false
}

// formatFloat writes f to digits significant digits, in plain decimal unless that would be very long.
func formatFloat(f *big.Float, digits int) string {
	if f.Sign() == 0 {
		return "0"
	}
	s := f.Text('g', digits)
	mant, exp, sci := strings.Cut(s, "e")
	if !sci {
		return trimZeros(s)
	}
	var n int
	fmt.Sscan(exp, &n)
	if n < -20 || n >= digits {
		return trimZeros(mant) + "e" + exp
	}
	return trimZeros(f.Text('f', max(digits-1-n, 0)))
}

// trimZeros drops the trailing zeros of a decimal fraction, and its point when nothing follows.
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}
