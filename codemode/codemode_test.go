package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

// fakeTools is a host.ToolCaller whose tools are Go functions; it records every call.
type fakeTools struct {
	fns map[string]func(ctx context.Context, args json.RawMessage) (*host.Result, error)
	// starting, when set, runs as a call starts, before it is recorded.
	starting func(name string, args json.RawMessage)

	mu    sync.Mutex
	calls []string // "name args"
}

// StartTool records the call when it starts, in the order the script made it, and runs the tool on a goroutine.
func (f *fakeTools) StartTool(ctx context.Context, name string, args json.RawMessage) func() (*host.Result, error) {
	if f.starting != nil {
		f.starting(name, args)
	}
	f.mu.Lock()
	f.calls = append(f.calls, name+" "+string(args))
	f.mu.Unlock()
	fn, ok := f.fns[name]
	if !ok {
		return func() (*host.Result, error) { return nil, fmt.Errorf("host: unknown tool %q", name) }
	}
	type outcome struct {
		res *host.Result
		err error
	}
	ch := make(chan outcome, 1)
	go func() {
		res, err := fn(ctx, args)
		ch <- outcome{res, err}
	}()
	return func() (*host.Result, error) {
		o := <-ch
		return o.res, o.err
	}
}

func (f *fakeTools) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// standard are the tools most tests use: echo gives its arguments back as structured content, text gives text,
// fail fails as a tool, broken fails as a call, thenable gives an object with a then key.
func standard() *fakeTools {
	return &fakeTools{fns: map[string]func(context.Context, json.RawMessage) (*host.Result, error){
		"echo": func(_ context.Context, args json.RawMessage) (*host.Result, error) {
			return &host.Result{Text: "ignored when structured", Structured: args}, nil
		},
		"text": func(context.Context, json.RawMessage) (*host.Result, error) {
			return &host.Result{Text: "plain words"}, nil
		},
		"any-name": func(context.Context, json.RawMessage) (*host.Result, error) {
			return &host.Result{Text: "dashed"}, nil
		},
		"fail": func(context.Context, json.RawMessage) (*host.Result, error) {
			return &host.Result{Text: "the disk is full", IsError: true}, nil
		},
		"broken": func(context.Context, json.RawMessage) (*host.Result, error) {
			return nil, errors.New("host: tool broken refused by policy")
		},
		"thenable": func(context.Context, json.RawMessage) (*host.Result, error) {
			return &host.Result{Structured: json.RawMessage(`{"then":"not a function","n":1}`)}, nil
		},
	}}
}

// decoded is Result.Structured as a test reads it.
type decoded struct {
	Value     json.RawMessage `json:"value"`
	Log       []string        `json:"log"`
	Error     *scriptError    `json:"error"`
	Truncated bool            `json:"truncated"`
}

func run(t *testing.T, opts *Options, tools host.ToolCaller, code string) (*host.Result, decoded) {
	t.Helper()
	res, err := New(opts).Run(t.Context(), code, tools)
	if err != nil {
		t.Fatalf("Run(%q): %v", code, err)
	}
	var d decoded
	if err := json.Unmarshal(res.Structured, &d); err != nil {
		t.Fatalf("Run(%q): structured %s: %v", code, res.Structured, err)
	}
	return res, d
}

// value runs code that must succeed and returns its value as compact JSON.
func value(t *testing.T, tools host.ToolCaller, code string) string {
	t.Helper()
	res, d := run(t, nil, tools, code)
	if res.IsError {
		t.Fatalf("Run(%q) failed: %s", code, res.Text)
	}
	return string(d.Value)
}

// scriptErr runs code that must fail and returns its error.
func scriptErr(t *testing.T, opts *Options, tools host.ToolCaller, code string) *scriptError {
	t.Helper()
	res, d := run(t, opts, tools, code)
	if !res.IsError || d.Error == nil {
		t.Fatalf("Run(%q) = %q, want a script error", code, res.Text)
	}
	if !strings.Contains(res.Text, d.Error.Message) {
		t.Errorf("Run(%q): the model reads %q, without the error %q", code, res.Text, d.Error.Message)
	}
	return d.Error
}

func TestReturnValues(t *testing.T) {
	for _, tc := range []struct{ code, want string }{
		{`return 1 + 1`, `2`},
		{`return 1.5`, `1.5`},
		{`return "s"`, `"s"`},
		{`return true`, `true`},
		{`return null`, `null`},
		{`return [1, {a: [2]}]`, `[1,{"a":[2]}]`},
		{`const {a, ...rest} = {a: 1, b: 2, c: 3}; return {a, rest, o: rest?.x?.y ?? "none"}`, `{"a":1,"rest":{"b":2,"c":3},"o":"none"}`},
	} {
		if got := value(t, standard(), tc.code); got != tc.want {
			t.Errorf("Run(%q) value = %s, want %s", tc.code, got, tc.want)
		}
	}
	res, d := run(t, nil, standard(), `let x = 1`)
	if res.IsError || d.Value != nil || res.Text != "Returned:\nundefined" {
		t.Errorf("undefined: Text %q, value %s", res.Text, d.Value)
	}
	e := scriptErr(t, nil, standard(), `const a = {}; a.self = a; return a`)
	if !strings.Contains(e.Message, "cannot be written as JSON") {
		t.Errorf("a cyclic value: %q", e.Message)
	}
}

func TestToolResults(t *testing.T) {
	tools := standard()
	for _, tc := range []struct{ code, want string }{
		{`return await tools.echo({a: 1, b: [true]})`, `{"a":1,"b":[true]}`},
		{`return await tools.text({})`, `"plain words"`},
		{`return await tools["any-name"]()`, `"dashed"`},
		{`try { await tools.fail({}) } catch (e) { return [e instanceof Error, e.message] }`, `[true,"the disk is full"]`},
		{`try { await tools.broken({}) } catch (e) { return e.message }`, `"host: tool broken refused by policy"`},
		{`try { await tools.nope({}) } catch (e) { return e.message }`, `"host: unknown tool \"nope\""`},
		{`try { await tools.echo(5) } catch (e) { return e.name }`, `"TypeError"`},
		{`return tools.fail({}).catch(e => "caught " + e.message)`, `"caught the disk is full"`},
	} {
		if got := value(t, tools, tc.code); got != tc.want {
			t.Errorf("Run(%q) value = %s, want %s", tc.code, got, tc.want)
		}
	}
	if got := tools.called(); !slices.Contains(got, `echo {"a":1,"b":[true]}`) || !slices.Contains(got, `any-name {}`) {
		t.Errorf("calls %q, want echo's arguments as JSON and {} for none", got)
	}
	// An uncaught failure is the script's error, with the line of the call.
	e := scriptErr(t, nil, tools, "const a = 1;\n  await tools.fail({});")
	if e.Message != "Error: the disk is full" || e.Line != 2 {
		t.Errorf("uncaught tool failure: %+v", e)
	}
}

func TestPromiseAllRunsCallsInParallel(t *testing.T) {
	const n = 5
	var mu sync.Mutex
	started := 0
	all := make(chan struct{})
	tools := &fakeTools{fns: map[string]func(context.Context, json.RawMessage) (*host.Result, error){
		// Each call waits until all n have started: run one at a time, the first would never return.
		"wait": func(ctx context.Context, args json.RawMessage) (*host.Result, error) {
			mu.Lock()
			started++
			if started == n {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
				return &host.Result{Structured: args}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}}
	res, d := run(t, &Options{Timeout: time.Minute}, tools,
		fmt.Sprintf(`const r = await Promise.all([...Array(%d).keys()].map(i => tools.wait({i}))); return r.map(x => x.i)`, n))
	if res.IsError || string(d.Value) != `[0,1,2,3,4]` {
		t.Fatalf("Promise.all: %s", res.Text)
	}
}

// Calls are started in the script's order, on the engine's goroutine, even when Promise.all runs them together and
// they finish in reverse order: the host numbers them by their start.
func TestCallsStartInScriptOrder(t *testing.T) {
	const n = 4
	finished := make([]chan struct{}, n+1)
	for i := range finished {
		finished[i] = make(chan struct{})
	}
	close(finished[n])
	tools := &fakeTools{fns: map[string]func(context.Context, json.RawMessage) (*host.Result, error){
		// Call i returns once call i+1 has: the last one first.
		"step": func(ctx context.Context, args json.RawMessage) (*host.Result, error) {
			var in struct{ I int }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			select {
			case <-finished[in.I+1]:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			close(finished[in.I])
			return &host.Result{Structured: args}, nil
		},
	}}
	// The first call is slow to start: it gives the second one a while to overtake it, which it must not (the
	// engine waits for the start of each call before it goes on, so here the wait always runs out).
	second := make(chan struct{})
	tools.starting = func(_ string, args json.RawMessage) {
		switch string(args) {
		case `{"i":0}`:
			select {
			case <-second:
			case <-time.After(200 * time.Millisecond):
			}
		case `{"i":1}`:
			close(second)
		}
	}
	res, d := run(t, &Options{Timeout: time.Minute}, tools,
		fmt.Sprintf(`const r = await Promise.all([...Array(%d).keys()].map(i => tools.step({i}))); return r.map(x => x.i)`, n))
	if res.IsError || string(d.Value) != `[0,1,2,3]` {
		t.Fatalf("Promise.all: %s", res.Text)
	}
	want := []string{`step {"i":0}`, `step {"i":1}`, `step {"i":2}`, `step {"i":3}`}
	if got := tools.called(); !slices.Equal(got, want) {
		t.Errorf("calls started in the order %q, want %q", got, want)
	}
}

func TestConsole(t *testing.T) {
	res, d := run(t, nil, standard(), `console.log("a", 1, {b: [2]}, [3], null, undefined);
console.info("info"); console.warn("careful"); console.error(new TypeError("bad"));
console.log(() => 1, 10n, Symbol("s"));
return "done"`)
	want := []string{`a 1 {"b":[2]} [3] null undefined`, "info", "[warn] careful", "[error] TypeError: bad",
		"[Function: anonymous] 10n Symbol(s)"}
	if !slices.Equal(d.Log, want) {
		t.Errorf("log %q, want %q", d.Log, want)
	}
	wantText := "Returned:\n\"done\"\nLog:\n" + strings.Join(want, "\n")
	if res.Text != wantText {
		t.Errorf("Text %q, want %q", res.Text, wantText)
	}
}

func TestErrorPositions(t *testing.T) {
	for _, tc := range []struct {
		code         string
		message      string
		line, column int
	}{
		{"const a = 1;\nconst b = ;\n", "SyntaxError", 2, 11},
		{"return (", "SyntaxError", 1, 9},
		{"const a = {};\n\n  a.b.c = 1;", "TypeError", 3, 6},
		{"function f() {\n  throw new RangeError('deep');\n}\nf();", "RangeError: deep", 2, 23},
	} {
		e := scriptErr(t, nil, standard(), tc.code)
		if !strings.HasPrefix(e.Message, tc.message) || e.Line != tc.line || e.Column != tc.column {
			t.Errorf("Run(%q): %+v, want %q at %d:%d", tc.code, e, tc.message, tc.line, tc.column)
		}
	}
	res, _ := run(t, nil, standard(), "\n  null.x")
	if !strings.Contains(res.Text, "Error at line 2, column") {
		t.Errorf("the model reads %q, without the line and column", res.Text)
	}
}

func TestThrownNonErrors(t *testing.T) {
	for code, want := range map[string]string{
		`throw 42`:                "Uncaught 42",
		`throw {a: 1}`:            `Uncaught {"a":1}`,
		`throw null`:              "Uncaught null: the script threw null, or ran out of its 64 MiB of memory",
		`throw undefined`:         "Uncaught undefined",
		`throw "words"`:           `Uncaught "words"`,
		`await Promise.reject(7)`: "Uncaught 7",
		`throw {get message() { throw 1 }, name: "x"}`: "Uncaught exception",
	} {
		if e := scriptErr(t, nil, standard(), code); e.Message != want {
			t.Errorf("Run(%q): %q, want %q", code, e.Message, want)
		}
	}
}

func TestUnhandledRejection(t *testing.T) {
	e := scriptErr(t, nil, standard(), "tools.fail({});\nawait tools.echo({});\nreturn 1")
	if e.Message != "unhandled rejection: Error: the disk is full" || e.Line != 1 {
		t.Errorf("unhandled: %+v", e)
	}
	// Consumed later, by Promise.all or a catch, it is handled.
	if got := value(t, standard(), `const p = tools.fail({}); const q = tools.broken({}); await tools.echo({});
try { await Promise.all([p]) } catch {} q.catch(() => {}); return 2`); got != "2" {
		t.Errorf("handled: %s", got)
	}
}

func TestNeverSettlingPromise(t *testing.T) {
	e := scriptErr(t, nil, standard(), `await new Promise(() => {})`)
	if !strings.Contains(e.Message, "nothing can settle") {
		t.Errorf("%q", e.Message)
	}
}

func TestTimeout(t *testing.T) {
	opts := &Options{Timeout: 300 * time.Millisecond}
	for _, code := range []string{`for (;;) {}`, `await null; while (true) {}`, `for (;;) await null`} {
		if e := scriptErr(t, opts, standard(), code); e.Message != "the script ran out of its 300ms" {
			t.Errorf("Run(%q): %q", code, e.Message)
		}
	}
	// A call in flight when time runs out is cancelled.
	cancelled := make(chan error, 1)
	tools := &fakeTools{fns: map[string]func(context.Context, json.RawMessage) (*host.Result, error){
		"hang": func(ctx context.Context, _ json.RawMessage) (*host.Result, error) {
			<-ctx.Done()
			cancelled <- ctx.Err()
			return nil, ctx.Err()
		},
	}}
	if e := scriptErr(t, opts, tools, `await tools.hang({})`); e.Message != "the script ran out of its 300ms" {
		t.Errorf("hanging call: %q", e.Message)
	}
	if err := <-cancelled; err == nil {
		t.Error("the call's context did not end")
	}
}

func TestCancel(t *testing.T) {
	// Cancelled while the script computes: the engine is interrupted.
	ctx, cancel := context.WithCancel(t.Context())
	tools := &fakeTools{fns: map[string]func(context.Context, json.RawMessage) (*host.Result, error){
		"cancel": func(context.Context, json.RawMessage) (*host.Result, error) {
			go cancel()
			return &host.Result{Text: "ok"}, nil
		},
	}}
	if res, err := New(nil).Run(ctx, `await tools.cancel({}); for (;;) {}`, tools); !errors.Is(err, context.Canceled) {
		t.Errorf("computing: %v, %v; want context.Canceled", res, err)
	}

	// Cancelled while a call is in flight: the call's context ends too.
	ctx, cancel = context.WithCancel(t.Context())
	hung := make(chan error, 1)
	tools = &fakeTools{fns: map[string]func(context.Context, json.RawMessage) (*host.Result, error){
		"hang": func(ctx context.Context, _ json.RawMessage) (*host.Result, error) {
			cancel()
			<-ctx.Done()
			hung <- ctx.Err()
			return nil, ctx.Err()
		},
	}}
	if res, err := New(nil).Run(ctx, `await tools.hang({})`, tools); !errors.Is(err, context.Canceled) {
		t.Errorf("calling: %v, %v; want context.Canceled", res, err)
	}
	if err := <-hung; err == nil {
		t.Error("the call's context did not end")
	}
}

func TestMemoryLimit(t *testing.T) {
	opts := &Options{MemoryLimit: 16 << 20}
	for _, code := range []string{
		`const a = []; for (;;) a.push("item " + a.length)`,
		`const a = []; for (;;) a.push(new ArrayBuffer(1 << 20))`,
		`const a = []; for (;;) { try { a.push(new Array(1e5).fill(1)) } catch {} }`,
	} {
		res, d := run(t, &Options{MemoryLimit: opts.MemoryLimit, Timeout: 5 * time.Second}, standard(), code)
		if !res.IsError || d.Error == nil || (d.Error.Message != "the script ran out of its 16 MiB of memory" &&
			d.Error.Message != "the script ran out of its 5s") {
			t.Errorf("Run(%q): %s", code, res.Text)
		}
	}
	// Within the limit, memory is there to use.
	if got := value(t, standard(), `return new Array(1e6).fill(7).length`); got != "1000000" {
		t.Errorf("a million items: %s", got)
	}
}

func TestOutOfMemoryAsNull(t *testing.T) {
	// Past the limit the engine may fail to allocate the error itself and throws null instead.
	for _, code := range []string{`const a = []; for (;;) a.push([a.length])`, `const m = new Map(); for (let i = 0;; i++) m.set(i, {i})`} {
		e := scriptErr(t, &Options{MemoryLimit: 4 << 20, Timeout: time.Minute}, standard(), code)
		if !strings.Contains(e.Message, "ran out of its 4 MiB of memory") {
			t.Errorf("Run(%q): %q", code, e.Message)
		}
	}
}

func TestArgumentBounds(t *testing.T) {
	opts := &Options{MemoryLimit: 16 << 20} // one call's arguments: 1 MiB; all in flight: 16 MiB
	tools := standard()
	for _, code := range []string{
		`await tools.echo({s: "x".repeat(2 << 20)})`,
		`await tools.echo({s: "é".repeat(600 << 10)})`, // 600 Ki characters, 1.2 MB of UTF-8
	} {
		e := scriptErr(t, opts, tools, code)
		if !strings.Contains(e.Message, "past the 1048576 one call may take") || e.Line != 1 {
			t.Errorf("Run(%q): %+v", code, e)
		}
	}
	if calls := tools.called(); len(calls) != 0 {
		t.Errorf("%d calls past the bound reached the host", len(calls))
	}
	// Twenty calls of 900 KiB each, all in flight at once: 18 fit in 16 MiB, the last two are refused; once the
	// first ones settled, there is room again.
	_, d := run(t, opts, tools, `const s = "x".repeat(900 << 10);
const r = await Promise.all([...Array(20).keys()].map(i => tools.echo({s}).then(() => "ok", e => e.message)));
await tools.echo({s});
return [r.filter(x => x === "ok").length, r[19]]`)
	var got []any
	if err := json.Unmarshal(d.Value, &got); err != nil || len(got) != 2 || got[0] != 18.0 ||
		!strings.Contains(fmt.Sprint(got[1]), "the calls in flight hold 16588944 bytes of arguments") {
		t.Errorf("calls in flight: %s (%v)", d.Value, d.Error)
	}
}

func TestRecursion(t *testing.T) {
	for _, code := range []string{`function f() { return f() + 1 } f()`, `const f = async () => await f(); await f()`} {
		res, d := run(t, &Options{Timeout: 20 * time.Second}, standard(), code)
		if !res.IsError || d.Error == nil || !strings.Contains(d.Error.Message, "stack overflow") {
			t.Errorf("Run(%q): %s", code, res.Text)
		}
	}
}

func TestMaxToolCalls(t *testing.T) {
	tools := standard()
	res, d := run(t, &Options{MaxToolCalls: 3}, tools, `const out = [];
for (let i = 0; i < 5; i++) { try { await tools.echo({i}); out.push("ok") } catch (e) { out.push(e.message) } }
return out`)
	want := `["ok","ok","ok","run_code allows at most 3 tool calls per script","run_code allows at most 3 tool calls per script"]`
	if res.IsError || string(d.Value) != want {
		t.Errorf("%s", res.Text)
	}
	if n := len(tools.called()); n != 3 {
		t.Errorf("%d calls reached the host, want 3", n)
	}
}

func TestOutputLimits(t *testing.T) {
	res, d := run(t, &Options{MaxOutputBytes: 100}, standard(), `return "x".repeat(1000)`)
	if !d.Truncated || d.Value != nil || !strings.Contains(res.Text, "cut to 100 of its 1002 bytes") || len(res.Text) > 200 {
		t.Errorf("long value: %q", res.Text)
	}
	res, d = run(t, &Options{MaxOutputBytes: 100}, standard(), `for (let i = 0; i < 100000; i++) console.log("line " + i); return 1`)
	if !d.Truncated || len(d.Log) > 20 || !strings.Contains(res.Text, "log cut") || len(res.Text) > 300 {
		t.Errorf("long log: %q", res.Text)
	}
}

func TestSandboxGlobals(t *testing.T) {
	got := value(t, standard(), `return Reflect.ownKeys(globalThis).map(String).sort()`)
	var names []string
	if err := json.Unmarshal([]byte(got), &names); err != nil {
		t.Fatal(err)
	}
	// The language's built-ins, tools and console: nothing of a host, no eval, no timers, no std or os.
	want := []string{"AggregateError", "Array", "ArrayBuffer", "Atomics", "BigInt", "BigInt64Array", "BigUint64Array",
		"Boolean", "DataView", "Date", "Error", "EvalError", "FinalizationRegistry", "Float16Array", "Float32Array",
		"Float64Array", "Function", "Infinity", "Int16Array", "Int32Array", "Int8Array", "InternalError", "Iterator",
		"JSON", "Map", "Math", "NaN", "Number", "Object", "Promise", "Proxy", "RangeError", "ReferenceError",
		"Reflect", "RegExp", "Set", "SharedArrayBuffer", "String", "Symbol", "Symbol(Symbol.toStringTag)",
		"SyntaxError", "TypeError", "URIError", "Uint16Array", "Uint32Array", "Uint8Array", "Uint8ClampedArray",
		"WeakMap", "WeakRef", "WeakSet", "console", "decodeURI", "decodeURIComponent", "encodeURI",
		"encodeURIComponent", "escape", "globalThis", "isFinite", "isNaN", "parseFloat", "parseInt", "tools",
		"undefined", "unescape"}
	sort.Strings(want)
	if !slices.Equal(names, want) {
		t.Errorf("globals %q\nwant %q", names, want)
	}
}

func TestEscapes(t *testing.T) {
	for _, tc := range []struct{ name, code, want string }{
		{"eval is gone", `return typeof eval`, `"undefined"`},
		{"Function", `try { Function("return 1")() } catch (e) { return e.name }`, `"EvalError"`},
		{"new Function", `try { new Function("return 1") } catch (e) { return e.name }`, `"EvalError"`},
		{"async function constructor", `try { (async () => {}).constructor("return 1") } catch (e) { return e.name }`, `"EvalError"`},
		{"generator constructor", `try { (function* () {}).constructor("yield 1") } catch (e) { return e.name }`, `"EvalError"`},
		{"constructor restored", `try { Object.defineProperty(Function.prototype, "constructor", {value: 1}) } catch (e) { return e.name }`, `"TypeError"`},
		{"tools.constructor.constructor", `try { return tools.constructor.constructor("return this")() } catch (e) { return e.name }`, `"EvalError"`},
		{"a tool's constructor", `try { return tools.echo.constructor("return 1")() } catch (e) { return e.name }`, `"EvalError"`},
		{"tools has no prototype", `return [Object.getPrototypeOf(tools), Object.isFrozen(tools), Object.keys(tools)]`, `[null,true,[]]`},
		{"tools cannot be changed", `tools.echo = 1; delete tools.echo; return typeof tools.echo`, `"function"`},
		{"tools cannot be defined on", `try { Object.defineProperty(tools, "x", {value: 1}) } catch (e) { return e.name }`, `"TypeError"`},
		{"tools cannot take a prototype", `try { Object.setPrototypeOf(tools, {}) } catch (e) { return e.name }`, `"TypeError"`},
		{"tools cannot be replaced", `tools = 1; globalThis.tools = 2; return typeof tools`, `"object"`},
		{"tools.__proto__ is only a tool name", `try { await tools.__proto__({}) } catch (e) { return e.message }`, `"host: unknown tool \"__proto__\""`},
		{"tools is not a thenable", `const t = await tools; return t === tools`, `true`},
		{"tools as JSON", `return JSON.stringify(tools)`, `"{}"`},
		{"host functions are gone", `return [typeof __call, typeof __log, typeof __done]`, `["undefined","undefined","undefined"]`},
		{"no host objects", `return [typeof require, typeof process, typeof std, typeof os, typeof fetch, typeof XMLHttpRequest, typeof WebSocket, typeof setTimeout, typeof print, typeof module]`,
			`["undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined"]`},
		{"no module loading", `try { await import("os") } catch (e) { return "refused" } return "loaded"`, `"refused"`},
		{"Object.prototype polluted", `Object.prototype.toJSON = function () { return "evil" }; return await tools.echo({a: 1})`, `"evil"`},
		{"Object.prototype.then polluted", `const r = await tools.text({}); Object.prototype.then = function (f) { f(7) }; return [r, await tools.text({})]`, `7`},
		{"a thenable result", `const r = await tools.thenable({}); return r`, `{"then":"not a function","n":1}`},
		{"a getter on args calls a tool", `return await tools.echo({get a() { tools.text({}); return 1 }})`, `{"a":1}`},
		{"console.log calls a tool", `console.log({toJSON() { tools.text({}); return "j" }}, {toString() { return tools.text({}) }}); return 1`, `1`},
		{"JSON.parse replaced", `JSON.parse = () => "forged"; return await tools.echo({a: 1})`, `{"a":1}`},
		{"Function.prototype.apply and call replaced", `Function.prototype.apply = Function.prototype.call = () => { throw 1 }; Reflect.apply = null;
const p = tools.fail({}); try { await p } catch (e) { return [e.message, await tools.echo({a: 1})] }`, `["the disk is full",{"a":1}]`},
		{"Promise replaced", `globalThis.Promise = function () { throw 1 }; return await tools.echo({a: 1})`, `{"a":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := value(t, standard(), tc.code); got != tc.want {
				t.Errorf("Run(%q) = %s, want %s", tc.code, got, tc.want)
			}
		})
	}
}

func TestEachScriptIsFresh(t *testing.T) {
	r := New(nil)
	if _, err := r.Run(t.Context(), `globalThis.leak = 1; Object.prototype.polluted = 2; Array.prototype.map = null`, standard()); err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), `return [typeof leak, ({}).polluted === undefined, typeof [].map]`, standard())
	if err != nil || res.IsError || !strings.Contains(res.Text, `["undefined",true,"function"]`) {
		t.Errorf("second script: %v, %v", res, err)
	}
}

func TestConcurrentRuns(t *testing.T) {
	r := New(nil)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			res, err := r.Run(t.Context(), fmt.Sprintf(`let s = 0; for (let j = 0; j < 10; j++) s += (await tools.echo({j})).j; return s + %d`, i), standard())
			if err != nil || res.IsError || res.Text != fmt.Sprintf("Returned:\n%d", 45+i) {
				t.Errorf("run %d: %v, %v", i, res, err)
			}
		})
	}
	wg.Wait()
}

func TestPreludeFitsAboveTheScript(t *testing.T) {
	if n := strings.Count(prelude, "\n"); n >= scriptOffset {
		t.Fatalf("the prelude has %d lines; the script starts at line %d", n, scriptOffset)
	}
}

// returns runs code and fails the test if Run does not return within a minute: a hang is the bug these tests catch.
func returns(t *testing.T, ctx context.Context, opts *Options, tools host.ToolCaller, code string) (*host.Result, error) {
	t.Helper()
	type ran struct {
		res *host.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := New(opts).Run(ctx, code, tools)
		done <- ran{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-time.After(time.Minute):
		t.Fatalf("Run(%q) did not return", code)
		return nil, nil
	}
}

// bigResult is about 8 MB of structured content, which the script's engine takes a while to parse.
func bigResult() *host.Result {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range 100_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"item %d %s"}`, i, i, strings.Repeat("x", 50))
	}
	b.WriteString(`]}`)
	return &host.Result{Structured: json.RawMessage(b.String())}
}

func TestTimeoutDuringSettle(t *testing.T) {
	// The result comes just before time runs out, so time runs out while the engine parses it: the interrupt must
	// not be lost between that call and the next.
	big := bigResult()
	tools := &fakeTools{fns: map[string]func(context.Context, json.RawMessage) (*host.Result, error){
		"big": func(ctx context.Context, _ json.RawMessage) (*host.Result, error) {
			if deadline, ok := ctx.Deadline(); ok {
				time.Sleep(time.Until(deadline) - 10*time.Millisecond)
			}
			return big, nil
		},
	}}
	res, err := returns(t, t.Context(), &Options{Timeout: 300 * time.Millisecond}, tools, `const r = await tools.big({}); for (;;) {}`)
	if err != nil || !res.IsError || !strings.Contains(res.Text, "the script ran out of its 300ms") {
		t.Errorf("timeout during a settle: %v, %v", res, err)
	}
}

func TestCancelDuringSettle(t *testing.T) {
	big := bigResult()
	ctx, cancel := context.WithCancel(t.Context())
	tools := &fakeTools{fns: map[string]func(context.Context, json.RawMessage) (*host.Result, error){
		"big": func(context.Context, json.RawMessage) (*host.Result, error) {
			go func() {
				time.Sleep(5 * time.Millisecond)
				cancel()
			}()
			return big, nil
		},
	}}
	res, err := returns(t, ctx, nil, tools, `const r = await tools.big({}); for (;;) {}`)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancel during a settle: %v, %v; want context.Canceled", res, err)
	}
}

func TestCallThatIgnoresItsContext(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	stuck := make(chan struct{}, 2)
	tools := &fakeTools{fns: map[string]func(context.Context, json.RawMessage) (*host.Result, error){
		"stuck": func(context.Context, json.RawMessage) (*host.Result, error) {
			stuck <- struct{}{}
			<-release
			return &host.Result{Text: "late"}, nil
		},
	}}
	// The script fails with the call in flight, or runs out of time awaiting it: either way Run returns after the
	// grace, and leaves the call behind.
	res, err := returns(t, t.Context(), nil, tools, `tools.stuck({}).catch(() => {}); throw new Error("gave up")`)
	if err != nil || !res.IsError || !strings.Contains(res.Text, "gave up") {
		t.Errorf("script failed with a call in flight: %v, %v", res, err)
	}
	res, err = returns(t, t.Context(), &Options{Timeout: 200 * time.Millisecond}, tools, `await tools.stuck({})`)
	if err != nil || !res.IsError || !strings.Contains(res.Text, "ran out of its 200ms") {
		t.Errorf("timeout with a call in flight: %v, %v", res, err)
	}
	if len(stuck) != 2 {
		t.Errorf("%d calls reached the tool, want 2", len(stuck))
	}
}

func TestManyMicrotasks(t *testing.T) {
	// Past the engine's bound on one drain of jobs (2^20, no knob), the script goes on. This takes a few seconds, and
	// much longer with -race: the engine's bound cannot be lowered.
	res, d := run(t, &Options{Timeout: 5 * time.Minute}, standard(), `let n = 0; for (let i = 0; i < 1050000; i++) { await null; n++ } return n`)
	if res.IsError || string(d.Value) != "1050000" {
		t.Errorf("many awaits: %s", res.Text)
	}
}
