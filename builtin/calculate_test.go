package builtin

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func calculateTool(t *testing.T, precision int) *calculate {
	t.Helper()
	ts, err := New([]string{"calculate"}, &Options{Calculate: CalculateOptions{Precision: precision}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Close() })
	tools, _ := ts.Tools(t.Context())
	return tools[0].(*calculate)
}

func TestCalculate(t *testing.T) {
	tool := calculateTool(t, 0)
	tests := []struct {
		expr, want string
		exact      bool
		fraction   string
	}{
		{"0.1 + 0.2", "0.3", true, ""},
		{"1/3", "0.33333333333333333333333333333333333333333333333333", true, "1/3"},
		{"sqrt(2)", "1.4142135623730950488016887242096980785696718753769", false, ""},
		{"2^100", "1267650600228229401496703205376", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			res, err := tool.Call(t.Context(), json.RawMessage(fmt.Sprintf(`{"expression":%q}`, tt.expr)), nil)
			if err != nil || res.IsError {
				t.Fatalf("Call: %v %+v", err, res)
			}
			var got calculateResult
			if err := json.Unmarshal(res.Structured, &got); err != nil {
				t.Fatal(err)
			}
			if got.Result != tt.want || got.Exact != (tt.exact && tt.fraction == "") || got.Fraction != tt.fraction {
				t.Errorf("= %+v, want %s (exact %v, fraction %q)", got, tt.want, tt.exact, tt.fraction)
			}
			if !strings.Contains(res.Text, tt.want) {
				t.Errorf("text %q lacks %s", res.Text, tt.want)
			}
		})
	}
}

func TestCalculateText(t *testing.T) {
	tool := calculateTool(t, 20)
	for expr, want := range map[string]string{
		"0.1 + 0.2": "0.1 + 0.2 = 0.3",
		"1/3":       "1/3 = 1/3 exactly, ≈ 0.33333333333333333333 (rounded to 20 significant digits)",
		"sqrt(2)":   "sqrt(2) ≈ 1.4142135623730950488 (rounded to 20 significant digits)",
	} {
		res, err := tool.Call(t.Context(), json.RawMessage(fmt.Sprintf(`{"expression":%q}`, expr)), nil)
		if err != nil || res.Text != want {
			t.Errorf("%s: %q, %v; want %q", expr, res.Text, err, want)
		}
	}
}

func TestCalculateErrors(t *testing.T) {
	tool := calculateTool(t, 0)
	tests := []struct{ args, want string }{
		{`{"expression":"1/0"}`, `Cannot calculate "1/0": division by zero at position 2`},
		{`{"expression":"   "}`, `the expression is empty; for example {"expression": "2 * (3 + 4)"}`},
		{`{}`, `the expression is empty`},
		{`{"expression":3}`, `Invalid arguments: expression must be a string, not number`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			res, err := tool.Call(t.Context(), json.RawMessage(tt.args), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Errorf("result %q (error %v), want it to contain %q", res.Text, res.IsError, tt.want)
			}
		})
	}
}

func TestCalculateNew(t *testing.T) {
	if _, err := New([]string{"calculate"}, &Options{Calculate: CalculateOptions{Precision: 5000}}); err == nil ||
		!strings.Contains(err.Error(), "builtin: calculate: precision must be between 1 and 1000, not 5000") {
		t.Errorf("err = %v", err)
	}
	// The tool's precision reaches the evaluator.
	res, err := calculateTool(t, 1000).Call(t.Context(), json.RawMessage(`{"expression":"pi"}`), nil)
	if err != nil || !strings.Contains(res.Text, "3001927876611195909216420199 (rounded to 1000 significant digits)") {
		t.Errorf("pi at precision 1000: %v %+v", err, res)
	}
}
