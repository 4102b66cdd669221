package builtin

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/builtin/calc"
	"github.com/agenthost/agenthost/host"
)

// calculate is the calculate tool: exact arithmetic on rationals, approximate only where a result is irrational
// (package calc evaluates).
type calculate struct {
	digits int // significant digits of inexact results
}

func newCalculate(e *env) (host.Tool, error) {
	p := e.opts.Calculate.Precision
	if p < 0 || p > calc.MaxDigits {
		return nil, fmt.Errorf("precision must be between 1 and %d, not %d", calc.MaxDigits, p)
	}
	return &calculate{digits: cmp.Or(p, 50)}, nil
}

var (
	calculateInput = json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string",` +
		`"description":"An arithmetic expression, e.g. (1.5 + 2) * 3^2 / 7. Operators + - * / ^ (power) % ` +
		`(remainder), parentheses, functions sqrt abs round floor ceil min max (round(x, digits) rounds to ` +
		`digits decimal places), constants pi and e."}},"required":["expression"]}`)
	calculateOutput = json.RawMessage(`{"type":"object","properties":{` +
		`"expression":{"type":"string"},` +
		`"result":{"type":"string","description":"the value in decimal"},` +
		`"exact":{"type":"boolean","description":"false when result is rounded to the tool's precision"},` +
		`"fraction":{"type":"string","description":"the exact value as a fraction, when its decimal does not end"}},` +
		`"required":["expression","result","exact"]}`)
)

func (t *calculate) Spec() host.ToolSpec {
	return host.ToolSpec{
		Name:  "calculate",
		Title: "Calculator",
		Description: "Evaluates an arithmetic expression exactly: decimals and integers of any size (0.1 + 0.2 is " +
			"0.3, 2^100 is exact), with + - * / ^ %, parentheses, sqrt, abs, round, floor, ceil, min, max, pi and e.",
		Prompt: "Use calculate for any arithmetic your answer depends on (sums, percentages, unit conversions, " +
			"compound growth) instead of working it out yourself, and report its result as it gives it.",
		InputSchema:  calculateInput,
		OutputSchema: calculateOutput,
		Annotations:  readOnly(false),
	}
}

type calculateResult struct {
	Expression string `json:"expression"`
	Result     string `json:"result"`
	Exact      bool   `json:"exact"`
	Fraction   string `json:"fraction,omitempty"`
}

const calculateExample = `{"expression": "2 * (3 + 4)"}`

func (t *calculate) Call(ctx context.Context, args json.RawMessage, _ *host.Call) (*host.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var in struct {
		Expression string `json:"expression"`
	}
	if err := decodeArgs(args, &in, calculateExample); err != nil {
		return errorResult("Invalid arguments: %v", err), nil
	}
	expr := strings.TrimSpace(in.Expression)
	if expr == "" {
		return errorResult("Cannot calculate %q: the expression is empty; for example %s", expr, calculateExample), nil
	}
	v, err := calc.Evaluate(expr, t.digits)
	if err != nil {
		return errorResult("Cannot calculate %q: %v", expr, err), nil
	}
	s, finite := v.Decimal(t.digits)
	r := calculateResult{Expression: expr, Result: s, Exact: finite}
	var text string
	switch {
	case !v.Exact():
		text = fmt.Sprintf("%s ≈ %s (rounded to %d significant digits)", expr, s, t.digits)
	case finite:
		text = expr + " = " + s
	default:
		r.Fraction = v.Fraction()
		text = fmt.Sprintf("%s = %s exactly, ≈ %s (rounded to %d significant digits)", expr, r.Fraction, s, t.digits)
	}
	structured, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return &host.Result{Text: text, Structured: structured}, nil
}
