// The prelude runs first in each script's fresh engine. It takes the three host functions Go registered as globals
// into its closure, removes them from the global object, removes the ways to compile code from strings, and installs
// the only two objects the script may use: tools and console. It returns ctl, the one function Go calls.
(function (maxToolCalls, scriptOffset, maxArgBytes, maxInFlightBytes) {
	"use strict";
	const hostCall = globalThis.__call, hostLog = globalThis.__log, hostDone = globalThis.__done;
	delete globalThis.__call;
	delete globalThis.__log;
	delete globalThis.__done;

	// Captured now: the script may replace any of these, which changes only what it sees itself.
	const stringify = JSON.stringify, parse = JSON.parse, ErrorC = Error, TypeErrorC = TypeError, StringC = String;
	const isArray = Array.isArray, freeze = Object.freeze, create = Object.create, WeakSetC = WeakSet, PromiseC = Promise;
	const weakAdd = WeakSet.prototype.add, weakHas = WeakSet.prototype.has, exec = RegExp.prototype.exec;
	const apply = Reflect.apply;

	// No code from strings: eval goes, and every function constructor throws.
	const denied = function () {
		throw new EvalError("run_code does not compile code from strings (eval, Function)");
	};
	delete globalThis.eval;
	for (const proto of [Function.prototype, Object.getPrototypeOf(async function () {}),
		Object.getPrototypeOf(function* () {}), Object.getPrototypeOf(async function* () {})]) {
		const stub = function () { return denied(); };
		Object.defineProperty(stub, "prototype", { value: proto });
		Object.defineProperty(proto, "constructor", { value: stub, writable: false, configurable: false });
		if (proto === Function.prototype) {
			Object.defineProperty(globalThis, "Function", { value: stub, writable: true, configurable: true, enumerable: false });
		}
	}

	// A tool's promise marks itself handled when anything consumes it (await, then, catch, Promise.all), so a failed
	// call that nothing awaited is reported as the unhandled rejection it is.
	const handled = new WeakSetC(), failed = [];
	class ToolPromise extends PromiseC {
		static get [Symbol.species]() { return PromiseC; }
		then(onFulfilled, onRejected) {
			apply(weakAdd, handled, [this]);
			return super.then(onFulfilled, onRejected);
		}
	}

	// Arguments are copied into Go outside the engine's memory cap, so each call's are bounded, and so are those of
	// all calls in flight. utf8Size counts what Go will hold: a byte per ASCII character, at most three for others.
	const nonASCII = /[^\x00-\x7f]/;
	function utf8Size(text) {
		if (apply(exec, nonASCII, [text]) === null) return text.length;
		let n = text.length;
		for (let i = 0; i < text.length; i++) {
			const c = text.charCodeAt(i);
			if (c >= 0x80) n += c >= 0x800 ? 2 : 1;
		}
		return n;
	}
	let inFlightBytes = 0;

	const pending = create(null);
	function call(name, args) {
		const err = new ErrorC(); // made here, so its line is the call's in the script
		let text;
		try {
			if (args === undefined) args = {};
			if (args === null || typeof args !== "object" || isArray(args)) {
				throw new TypeErrorC(`tools[${stringify(name)}] takes one object argument`);
			}
			text = stringify(args);
		} catch (e) {
			return new ToolPromise((_, reject) => reject(e));
		}
		const size = text.length > maxArgBytes ? text.length : utf8Size(text);
		if (size > maxArgBytes) {
			err.message = `tools[${stringify(name)}]: its arguments are ${size} bytes of JSON, past the ${maxArgBytes} one call may take`;
			return new ToolPromise((_, reject) => reject(err));
		}
		if (inFlightBytes + size > maxInFlightBytes) {
			err.message = `tools[${stringify(name)}]: the calls in flight hold ${inFlightBytes} bytes of arguments, and these ${size} ` +
				`would pass the ${maxInFlightBytes} allowed: await some calls first`;
			return new ToolPromise((_, reject) => reject(err));
		}
		const id = hostCall(name, text);
		if (id < 0) {
			err.message = `run_code allows at most ${maxToolCalls} tool calls per script`;
			return new ToolPromise((_, reject) => reject(err));
		}
		inFlightBytes += size;
		const entry = { err, size };
		entry.p = new ToolPromise((resolve, reject) => { entry.resolve = resolve; entry.reject = reject; });
		pending[id] = entry;
		return entry.p;
	}

	const fns = create(null);
	const target = freeze(create(null));
	const tools = new Proxy(target, {
		get(_, name) {
			// then and toJSON stay undefined so that awaiting tools or writing it as JSON calls nothing.
			if (typeof name !== "string" || name === "then" || name === "toJSON") return undefined;
			return fns[name] || (fns[name] = freeze((args) => call(name, args)));
		},
		set() { return false; },
		defineProperty() { return false; },
		deleteProperty() { return false; },
		setPrototypeOf() { return false; },
	});

	function show(v) {
		try {
			switch (typeof v) {
			case "string": return v;
			case "undefined": return "undefined";
			case "function": return `[Function: ${v.name || "anonymous"}]`;
			case "bigint": return StringC(v) + "n";
			case "symbol": return v.toString();
			}
			if (v instanceof ErrorC) return `${v.name}: ${v.message}`;
			const s = stringify(v);
			return s === undefined ? StringC(v) : s;
		} catch (e) {
			try { return StringC(v); } catch { return "[unprintable]"; }
		}
	}
	function logger(level) {
		return freeze(function (...args) {
			let line = "";
			for (let i = 0; i < args.length; i++) line += (i ? " " : "") + show(args[i]);
			hostLog(level, line);
		});
	}
	const console = freeze({ log: logger("log"), info: logger("info"), warn: logger("warn"), error: logger("error"), debug: logger("debug") });
	Object.defineProperty(globalThis, "tools", { value: tools, writable: false, configurable: false, enumerable: false });
	Object.defineProperty(globalThis, "console", { value: console, writable: false, configurable: false, enumerable: false });

	// Both the prelude and the script are "<eval>" to the engine; the script starts scriptOffset lines down, past
	// every line of the prelude, so the first frame below that offset is not the script's and is skipped.
	const where = /<eval>:(\d+):(\d+)/g;
	function describe(e) {
		const out = {};
		try {
			if (e !== null && typeof e === "object" && typeof e.message === "string" && typeof e.name === "string") {
				out.message = e.message === "" ? e.name : `${e.name}: ${e.message}`;
			} else {
				out.message = "Uncaught " + (typeof e === "string" ? stringify(e) : show(e));
			}
		} catch {
			out.message = "Uncaught exception";
		}
		try {
			const stack = typeof e === "object" && e !== null && typeof e.stack === "string" ? e.stack : "";
			where.lastIndex = 0;
			for (let m; (m = apply(exec, where, [stack])) !== null;) {
				if (+m[1] > scriptOffset) {
					out.line = +m[1] - scriptOffset;
					out.column = +m[2];
					break;
				}
			}
		} catch {}
		return out;
	}

	// ctl is what Go calls: "start" runs the script's function, "settle" ends a tool call, "unhandled" names the
	// first failed call that nothing consumed.
	return function ctl(op, a, b, c) {
		switch (op) {
		case "start":
			a().then((v) => {
				let report;
				try {
					const w = create(null); // no prototype: a toJSON the script put on Object.prototype is not ours to call
					w.v = v;
					report = stringify(w);
				} catch (e) {
					const d = describe(e);
					d.message = "the returned value cannot be written as JSON: " + d.message;
					report = stringify({ e: d });
				}
				hostDone(report);
			}, (e) => {
				const w = create(null);
				w.e = create(null);
				const d = describe(e);
				w.e.message = d.message;
				if (d.line) { w.e.line = d.line; w.e.column = d.column; }
				hostDone(stringify(w));
			});
			return;
		case "settle": {
			const call = pending[a];
			delete pending[a];
			inFlightBytes -= call.size;
			if (b === "error") {
				call.err.message = c;
				failed.push(call);
				call.reject(call.err);
			} else {
				call.resolve(b === "json" ? parse(c) : c);
			}
			return;
		}
		case "unhandled":
			for (const call of failed) {
				if (!apply(weakHas, handled, [call.p])) {
					const d = describe(call.err);
					d.message = "unhandled rejection: " + d.message;
					return stringify({ e: d });
				}
			}
			return "";
		}
	};
})
