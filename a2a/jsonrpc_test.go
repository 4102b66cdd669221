package a2a

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		code   int    // 0: no error
		id     string // the id the response carries; "" for null
		method string
	}{
		{name: "valid, number id", body: `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}`, id: `1`, method: "GetTask"},
		{name: "valid, string id", body: `{"jsonrpc":"2.0","id":"abc","method":"GetTask"}`, id: `"abc"`, method: "GetTask"},
		{name: "string id kept byte for byte", body: `{"jsonrpc":"2.0","id":"a\u00e9\"b","method":"m"}`, id: `"a\u00e9\"b"`, method: "m"},
		{name: "number id kept byte for byte", body: `{"jsonrpc":"2.0","id":1.50e3,"method":"m"}`, id: `1.50e3`, method: "m"},
		{name: "negative id", body: `{"jsonrpc":"2.0","id":-7,"method":"m"}`, id: `-7`, method: "m"},
		{name: "big id", body: `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m"}`, id: `123456789012345678901234567890`, method: "m"},
		{name: "null id", body: `{"jsonrpc":"2.0","id":null,"method":"m"}`, method: "m"},
		{name: "no id", body: `{"jsonrpc":"2.0","method":"m"}`, method: "m"},
		{name: "surrounding space", body: " \n\t{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"m\"}\r\n", id: `2`, method: "m"},

		{name: "invalid JSON", body: `{"jsonrpc":"2.0","id":1,"method":`, code: codeParseError},
		{name: "invalid JSON, not an object", body: `nope`, code: codeParseError},
		{name: "invalid JSON batch", body: `[{"jsonrpc":"2.0","id":1,"method":"m"},{"jsonrpc"]`, code: codeParseError},
		{name: "trailing garbage", body: `{"jsonrpc":"2.0","id":1,"method":"m"} x`, code: codeParseError},
		{name: "empty", body: ``, code: codeParseError},
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"m"}]`, code: codeInvalidRequest},
		{name: "empty batch", body: `[]`, code: codeInvalidRequest},
		{name: "string", body: `"x"`, code: codeInvalidRequest},
		{name: "number", body: `5`, code: codeInvalidRequest},
		{name: "null", body: `null`, code: codeInvalidRequest},
		{name: "jsonrpc 1.0", body: `{"jsonrpc":"1.0","id":7,"method":"m"}`, code: codeInvalidRequest, id: `7`},
		{name: "jsonrpc missing", body: `{"id":"x","method":"m"}`, code: codeInvalidRequest, id: `"x"`},
		{name: "jsonrpc a number", body: `{"jsonrpc":2.0,"id":3,"method":"m"}`, code: codeInvalidRequest, id: `3`},
		{name: "id an object", body: `{"jsonrpc":"2.0","id":{"a":1},"method":"m"}`, code: codeInvalidRequest},
		{name: "id a bool", body: `{"jsonrpc":"2.0","id":true,"method":"m"}`, code: codeInvalidRequest},
		{name: "id an array", body: `{"jsonrpc":"2.0","id":[1],"method":"m"}`, code: codeInvalidRequest},
		{name: "missing method", body: `{"jsonrpc":"2.0","id":9}`, code: codeInvalidRequest, id: `9`},
		{name: "method a number", body: `{"jsonrpc":"2.0","id":"q","method":5}`, code: codeInvalidRequest, id: `"q"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, rerr := decodeRequest([]byte(tt.body))
			if tt.code == 0 {
				if rerr != nil {
					t.Fatalf("error %v", rerr)
				}
				if req.Method != tt.method || req.JSONRPC != "2.0" {
					t.Errorf("request = %+v", req)
				}
			} else if rerr == nil || rerr.Code != tt.code {
				t.Fatalf("error = %v, want code %d", rerr, tt.code)
			}
			// The response carries the id as it came, or null.
			var id json.RawMessage
			if req != nil {
				id = req.ID
			}
			gotID := string(id)
			if gotID == "null" {
				gotID = ""
			}
			if gotID != tt.id {
				t.Errorf("id = %s, want %s", id, orDefault(tt.id, "null"))
			}
			rec := httptest.NewRecorder()
			if rerr != nil {
				writeError(rec, id, rerr)
			} else {
				writeResult(rec, id, map[string]string{})
			}
			var resp struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || resp.JSONRPC != "2.0" {
				t.Fatalf("response %s: %v", rec.Body, err)
			}
			if want := orDefault(tt.id, "null"); string(resp.ID) != want {
				t.Errorf("response id = %s, want %s", resp.ID, want)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want version
		ok   bool
	}{
		{"", v03, true},
		{"  ", v03, true},
		{"0.3", v03, true},
		{"1.0", v10, true},
		{" 1.0 ", v10, true},
		{"1.0.2", v10, true},
		{"0.3.0", v03, true},
		{"1.1", version{1, 1}, true},
		{"2.0", version{2, 0}, true},
		{"1", version{}, false},
		{"x.y", version{}, false},
		{"1.x", version{}, false},
		{"1.0.0.0", version{}, false},
		{"-1.0", version{}, false},
		{"1.-1", version{}, false},
		{".", version{}, false},
		{"v1.0", version{}, false},
	} {
		got, err := parseVersion(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("parseVersion(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	if v10.String() != "1.0" || v03.String() != "0.3" {
		t.Errorf("String: %s %s", v10, v03)
	}
}

// errorInfos decodes v1.0's error.data.
func errorInfos(t *testing.T, data json.RawMessage) []map[string]string {
	t.Helper()
	var infos []map[string]string
	if err := json.Unmarshal(data, &infos); err != nil {
		t.Fatalf("error.data %s: %v", data, err)
	}
	return infos
}

func TestNewError(t *testing.T) {
	e := newError(codeTaskNotFound, "task %q not found", "t1")
	if e.Code != -32001 || e.Message != `task "t1" not found` {
		t.Errorf("error = %+v", e)
	}
	infos := errorInfos(t, e.Data)
	want := map[string]string{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}
	if len(infos) != 1 || len(infos[0]) != len(want) {
		t.Fatalf("data = %s", e.Data)
	}
	for k, v := range want {
		if infos[0][k] != v {
			t.Errorf("data[%s] = %q, want %q", k, infos[0][k], v)
		}
	}
	if !strings.Contains(e.Error(), "TaskNotFoundError") || !strings.Contains(e.Error(), "-32001") {
		t.Errorf("Error() = %q", e.Error())
	}
	for code, info := range errorInfo {
		if got := errorInfos(t, newError(code, "x").Data); got[0]["reason"] != info.reason {
			t.Errorf("code %d: reason %q, want %q", code, got[0]["reason"], info.reason)
		}
	}

	v03err := e.forVersion(v03)
	if v03err.Data != nil || v03err.Code != e.Code || v03err.Message != e.Message {
		t.Errorf("forVersion(0.3) = %+v", v03err)
	}
	if e.Data == nil {
		t.Error("forVersion changed the original")
	}
	if e.forVersion(v10) != e || e.forVersion(version{1, 1}).Data == nil {
		t.Error("forVersion(1.x) dropped data")
	}
	b, _ := json.Marshal(v03err)
	if bytes.Contains(b, []byte(`"data"`)) {
		t.Errorf("v0.3 error JSON has data: %s", b)
	}

	// A code A2A does not name has no ErrorInfo, and reads as a plain error.
	other := newError(-1, "odd")
	if other.Data != nil || other.Error() != "error -1: odd" {
		t.Errorf("unknown code: %+v %q", other, other.Error())
	}
}

// sameJSONValue reports how a and b differ as JSON values (numbers compared as written), or nil.
func sameJSONValue(a, b json.RawMessage) error {
	decode := func(raw json.RawMessage) (any, error) {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		err := d.Decode(&v)
		return v, err
	}
	va, err := decode(a)
	if err != nil {
		return err
	}
	vb, err := decode(b)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(va, vb) {
		return fmt.Errorf("%v != %v", va, vb)
	}
	return nil
}

func FuzzJSONRPCRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tasks/get","params":{"id":"t"}}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"m"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"m"}`,
		`{"jsonrpc":"2.0","id":true,"method":"m"}`,
		`{"jsonrpc":"1.0","id":7,"method":"m"}`,
		`{"jsonrpc":"2.0","id":7,"method":5}`,
		`{"jsonrpc":"2.0","id":7,"params":[]}`,
		`[{"jsonrpc":"2.0","id":1,"method":"m"}]`,
		`[`,
		`{"id":"\ud800"}`,
		`"x"`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, rerr := decodeRequest(body)
		var id json.RawMessage
		if req != nil {
			id = req.ID
			if !validID(id) {
				t.Fatalf("decoded id %q is neither absent, a string nor a number", id)
			}
		}
		if rerr == nil {
			if req == nil || req.JSONRPC != "2.0" || req.Method == "" {
				t.Fatalf("accepted %+v", req)
			}
			if len(id) > 0 && string(id) != "null" && id[0] != '"' {
				var n json.Number
				if err := json.Unmarshal(id, &n); err != nil {
					t.Fatalf("id %s: %v", id, err)
				}
			}
		} else if rerr.Code != codeParseError && rerr.Code != codeInvalidRequest {
			t.Fatalf("error code %d", rerr.Code)
		}
		if rerr != nil && rerr.Code == codeParseError && len(id) > 0 {
			t.Fatalf("a parse error carries id %s", id)
		}
		// The response can always be written, and is valid JSON with the id echoed.
		rec := httptest.NewRecorder()
		if rerr != nil {
			writeError(rec, id, rerr)
		} else {
			writeResult(rec, id, nil)
		}
		var resp rpcResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatalf("response %q: %v", rec.Body, err)
		}
		if len(id) > 0 && sameJSONValue(resp.ID, id) != nil {
			t.Fatalf("response id %s, request id %s: %v", resp.ID, id, sameJSONValue(resp.ID, id))
		}
	})
}
