package a2a

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// viaV03 sends r through v0.3 as a peer would: to the v0.3 object, to JSON, and back with decodeV03.
func viaV03(t *testing.T, r *streamResponse) (*streamResponse, map[string]any) {
	t.Helper()
	b, err := json.Marshal(r.toV03())
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	var shape map[string]any
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	back, err := decodeV03(b)
	if err != nil {
		t.Fatalf("decodeV03(%s): %v", b, err)
	}
	return back, shape
}

// asJSON shows v as JSON in a failure message.
func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// everyPartKind has a part of every kind, with what each may carry.
func everyPartKind() []part {
	return []part{
		{Kind: partText, Text: "hello", Metadata: json.RawMessage(`{"k":"v"}`)},
		{Kind: partText, Text: ""},
		{Kind: partRaw, Raw: []byte{0, 1, 2, 0xfb, 0xff, 'x'}, MediaType: "application/octet-stream", Filename: "blob.bin"},
		{Kind: partURL, URL: "https://example.com/doc.pdf", MediaType: "application/pdf", Filename: "doc.pdf"},
		{Kind: partData, Data: json.RawMessage(`{"a":1,"b":[true,null]}`)},
		{Kind: partData, Data: json.RawMessage(`[1,2,3]`)},
		{Kind: partData, Data: json.RawMessage(`"just a string"`), Metadata: json.RawMessage(`{"keep":true}`)},
		{Kind: partData, Data: json.RawMessage(`42`)},
	}
}

func TestV03RoundTripMessage(t *testing.T) {
	for _, role := range []string{roleUser, roleAgent} {
		m := message{
			MessageID: "m1", Role: role, Parts: everyPartKind(), ContextID: "c1", TaskID: "t1",
			Metadata: json.RawMessage(`{"x":"y"}`), Extensions: []string{"urn:ext"}, ReferenceTaskIDs: []string{"t0"},
		}
		back, shape := viaV03(t, &streamResponse{Message: &m})
		if back.Message == nil {
			t.Fatalf("%s: decoded %+v", role, back)
		}
		if !reflect.DeepEqual(*back.Message, m) {
			t.Errorf("%s: round trip\n got %s\nwant %s", role, asJSON(*back.Message), asJSON(m))
		}
		if shape["kind"] != "message" || shape["role"] != map[string]string{roleUser: "user", roleAgent: "agent"}[role] {
			t.Errorf("%s: v0.3 shape %v", role, shape)
		}
	}
}

func TestV03PartShapes(t *testing.T) {
	m := message{MessageID: "m", Role: roleUser, Parts: everyPartKind()}
	_, shape := viaV03(t, &streamResponse{Message: &m})
	parts := shape["parts"].([]any)
	get := func(i int) map[string]any { return parts[i].(map[string]any) }
	if p := get(0); p["kind"] != "text" || p["text"] != "hello" {
		t.Errorf("text part %v", p)
	}
	if p := get(1); p["kind"] != "text" || p["text"] != "" {
		t.Errorf("empty text part %v", p)
	}
	raw := get(2)
	file := raw["file"].(map[string]any)
	if raw["kind"] != "file" || file["bytes"] != base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xfb, 0xff, 'x'}) ||
		file["mimeType"] != "application/octet-stream" || file["name"] != "blob.bin" || file["uri"] != nil {
		t.Errorf("raw part %v", raw)
	}
	u := get(3)
	file = u["file"].(map[string]any)
	if u["kind"] != "file" || file["uri"] != "https://example.com/doc.pdf" || file["mimeType"] != "application/pdf" || file["name"] != "doc.pdf" || file["bytes"] != nil {
		t.Errorf("url part %v", u)
	}
	if p := get(4); p["kind"] != "data" || p["metadata"] != nil || !reflect.DeepEqual(p["data"], map[string]any{"a": 1.0, "b": []any{true, nil}}) {
		t.Errorf("data part %v", p)
	}
	// Data that is not an object is wrapped, and the wrapping flagged, as the JS SDK does.
	for i, want := range map[int]any{5: []any{1.0, 2.0, 3.0}, 6: "just a string", 7: 42.0} {
		p := get(i)
		meta, _ := p["metadata"].(map[string]any)
		if p["kind"] != "data" || !reflect.DeepEqual(p["data"], map[string]any{"value": want}) || meta[dataCompatKey] != true {
			t.Errorf("part %d: %v", i, p)
		}
	}
	if meta := get(6)["metadata"].(map[string]any); meta["keep"] != true {
		t.Errorf("wrapped part lost its metadata: %v", meta)
	}
}

// An empty file keeps its "bytes" key in v0.3, so that it reads back as an empty file and not as a part without
// content.
func TestV03EmptyFile(t *testing.T) {
	m := message{MessageID: "m", Role: roleUser, Parts: []part{{Kind: partRaw, Raw: []byte{}, MediaType: "text/plain"}}}
	back, shape := viaV03(t, &streamResponse{Message: &m})
	file := shape["parts"].([]any)[0].(map[string]any)["file"].(map[string]any)
	if b, ok := file["bytes"]; !ok || b != "" {
		t.Errorf("empty file part written as %v", file)
	}
	if got := back.Message.Parts; len(got) != 1 || got[0].Kind != partRaw || len(got[0].Raw) != 0 {
		t.Errorf("read back as %+v", got)
	}
}

// A v0.3 peer's data part flagged as wrapped is unwrapped, and the flag does not leak into the part's metadata.
func TestV03DataCompatFromPeer(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		data     string
		meta     string
	}{
		{"wrapped", `{"kind":"data","data":{"value":[1]},"metadata":{"data_part_compat":true}}`, `[1]`, ``},
		{"wrapped with other metadata", `{"kind":"data","data":{"value":"s"},"metadata":{"data_part_compat":true,"k":1}}`, `"s"`, `{"k":1}`},
		{"flag false", `{"kind":"data","data":{"value":1},"metadata":{"data_part_compat":false}}`, `{"value":1}`, `{"data_part_compat":false}`},
		{"no flag", `{"kind":"data","data":{"value":1}}`, `{"value":1}`, ``},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := decodeV03([]byte(`{"kind":"message","messageId":"m","role":"agent","parts":[` + tt.in + `]}`))
			if err != nil {
				t.Fatal(err)
			}
			p := res.Message.Parts[0]
			if p.Kind != partData || sameJSONValue(p.Data, json.RawMessage(tt.data)) != nil {
				t.Errorf("data = %s, want %s", p.Data, tt.data)
			}
			if tt.meta == "" {
				if len(p.Metadata) != 0 {
					t.Errorf("metadata = %s, want none", p.Metadata)
				}
			} else if sameJSONValue(p.Metadata, json.RawMessage(tt.meta)) != nil {
				t.Errorf("metadata = %s, want %s", p.Metadata, tt.meta)
			}
		})
	}
}

func TestV03RoundTripTask(t *testing.T) {
	states := []taskState{stateSubmitted, stateWorking, stateCompleted, stateFailed, stateCanceled, stateInputRequired, stateRejected, stateAuthRequired, stateUnspecified}
	for _, state := range states {
		tk := task{
			ID: "t1", ContextID: "c1",
			Status: taskStatus{State: state, Timestamp: "2026-01-02T03:04:05.000Z", Message: &message{
				MessageID: "s1", Role: roleAgent, Parts: []part{textPart("status")}, ContextID: "c1", TaskID: "t1",
			}},
			Artifacts: []artifact{
				{ArtifactID: "a1", Name: "answer", Description: "the answer", Parts: everyPartKind(), Metadata: json.RawMessage(`{"m":1}`), Extensions: []string{"e"}},
				{ArtifactID: "a2", Parts: []part{textPart("two")}},
			},
			History: []message{
				{MessageID: "h1", Role: roleUser, Parts: []part{textPart("q")}, ContextID: "c1", TaskID: "t1"},
				{MessageID: "h2", Role: roleAgent, Parts: []part{{Kind: partData, Data: json.RawMessage(`true`)}}},
			},
			Metadata: json.RawMessage(`{"tm":"x"}`),
		}
		back, shape := viaV03(t, &streamResponse{Task: &tk})
		if back.Task == nil {
			t.Fatalf("%s: decoded %+v", state, back)
		}
		if !reflect.DeepEqual(*back.Task, tk) {
			t.Errorf("%s: round trip\n got %s\nwant %s", state, asJSON(*back.Task), asJSON(tk))
		}
		wantState := state.short()
		if state == stateUnspecified {
			wantState = "unknown"
		}
		status := shape["status"].(map[string]any)
		if shape["kind"] != "task" || status["state"] != wantState || status["message"].(map[string]any)["kind"] != "message" {
			t.Errorf("%s: v0.3 shape %v", state, shape)
		}
	}
	if got := stateInputRequired.short(); got != "input-required" {
		t.Errorf("short = %q", got)
	}
	// No history, no artifacts, no status message: none invented.
	bare := task{ID: "t", ContextID: "c", Status: taskStatus{State: stateWorking}}
	back, _ := viaV03(t, &streamResponse{Task: &bare})
	if !reflect.DeepEqual(*back.Task, bare) {
		t.Errorf("bare task: %+v", *back.Task)
	}
}

func TestV03RoundTripEvents(t *testing.T) {
	for _, final := range []bool{false, true} {
		su := statusUpdate{TaskID: "t", ContextID: "c", Final: final, Metadata: json.RawMessage(`{"a":1}`),
			Status: taskStatus{State: stateInputRequired, Message: &message{MessageID: "q", Role: roleAgent, Parts: []part{textPart("approve?")}}}}
		back, shape := viaV03(t, &streamResponse{StatusUpdate: &su})
		if back.StatusUpdate == nil || !reflect.DeepEqual(*back.StatusUpdate, su) {
			t.Errorf("status-update final=%v: %+v", final, back.StatusUpdate)
		}
		if shape["kind"] != "status-update" || shape["final"] != final {
			t.Errorf("status-update shape %v", shape)
		}
	}
	for _, flags := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		au := artifactUpdate{TaskID: "t", ContextID: "c", Append: flags[0], LastChunk: flags[1],
			Artifact: artifact{ArtifactID: "a", Name: "answer", Parts: []part{textPart("chunk"), {Kind: partURL, URL: "https://x/"}}}}
		back, shape := viaV03(t, &streamResponse{ArtifactUpdate: &au})
		if back.ArtifactUpdate == nil || !reflect.DeepEqual(*back.ArtifactUpdate, au) {
			t.Errorf("artifact-update %v: %+v", flags, back.ArtifactUpdate)
		}
		if shape["kind"] != "artifact-update" {
			t.Errorf("artifact-update shape %v", shape)
		}
	}
}

func TestDecodeV03(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // which field of streamResponse is set; "" for an error
	}{
		{"task", `{"kind":"task","id":"t","contextId":"c","status":{"state":"completed"}}`, "task"},
		{"task without kind", `{"id":"t","contextId":"c","status":{"state":"working"}}`, "task"},
		{"message", `{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"hi"}]}`, "message"},
		{"message without kind", `{"messageId":"m","role":"agent","taskId":"t","parts":[{"text":"hi"}]}`, "message"},
		{"status-update", `{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"input-required"},"final":true}`, "status"},
		{"status-update without kind", `{"taskId":"t","contextId":"c","status":{"state":"working"},"final":false}`, "status"},
		{"artifact-update", `{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"kind":"text","text":"x"}]}}`, "artifact"},
		{"artifact-update without kind", `{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"x"}]},"append":true}`, "artifact"},
		{"parts without kind", `{"messageId":"m","role":"user","parts":[{"file":{"uri":"http://x/"}},{"data":{"a":1}}]}`, "message"},
		{"unknown kind", `{"kind":"mystery","id":"t"}`, ""},
		{"nothing to tell it by", `{"id":"t"}`, ""},
		{"not an object", `[1]`, ""},
		{"not JSON", `{`, ""},
		{"file part with neither bytes nor uri", `{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{"name":"x.txt","mimeType":"text/plain"}}]}`, ""},
		{"file part with bad base64", `{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"!!"}}]}`, ""},
		{"part kind with other content", `{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","data":{"a":1}}]}`, ""},
		{"empty part", `{"kind":"message","messageId":"m","role":"user","parts":[{}]}`, ""},
		{"bad part in history", `{"kind":"task","id":"t","contextId":"c","status":{"state":"working"},"history":[{"messageId":"m","role":"user","parts":[{"kind":"file","file":{}}]}]}`, ""},
		{"bad part in artifact", `{"kind":"task","id":"t","contextId":"c","status":{"state":"working"},"artifacts":[{"artifactId":"a","parts":[{"kind":"bogus"}]}]}`, ""},
		{"bad part in status message", `{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"working","message":{"messageId":"m","role":"agent","parts":[{}]}}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := decodeV03([]byte(tt.in))
			if tt.want == "" {
				if err == nil {
					t.Fatalf("decoded %+v, want an error", res)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{"task": res.Task != nil, "message": res.Message != nil, "status": res.StatusUpdate != nil, "artifact": res.ArtifactUpdate != nil}
			for k, set := range got {
				if set != (k == tt.want) {
					t.Errorf("%s set = %v, want only %s", k, set, tt.want)
				}
			}
		})
	}
	res, err := decodeV03([]byte(`{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"input-required"},"final":true}`))
	if err != nil || res.StatusUpdate.Status.State != stateInputRequired || !res.StatusUpdate.Final {
		t.Errorf("status-update: %+v, %v", res, err)
	}
}

func TestParseState(t *testing.T) {
	for in, want := range map[string]taskState{
		"submitted": stateSubmitted, "TASK_STATE_SUBMITTED": stateSubmitted,
		"working": stateWorking, "TASK_STATE_WORKING": stateWorking,
		"input-required": stateInputRequired, "TASK_STATE_INPUT_REQUIRED": stateInputRequired, "INPUT_REQUIRED": stateInputRequired,
		"auth-required": stateAuthRequired, "TASK_STATE_AUTH_REQUIRED": stateAuthRequired,
		"completed": stateCompleted, " Completed ": stateCompleted,
		"failed": stateFailed, "canceled": stateCanceled, "rejected": stateRejected, "TASK_STATE_REJECTED": stateRejected,
		"unknown": stateUnspecified, "TASK_STATE_UNSPECIFIED": stateUnspecified, "": stateUnspecified, "done": stateUnspecified,
		"cancelled": stateUnspecified,
	} {
		if got := parseState(in); got != want {
			t.Errorf("parseState(%q) = %s, want %s", in, got, want)
		}
	}
	var s taskState
	if err := json.Unmarshal([]byte(`"input-required"`), &s); err != nil || s != stateInputRequired {
		t.Errorf("unmarshal: %s, %v", s, err)
	}
	if err := json.Unmarshal([]byte(`3`), &s); err == nil {
		t.Error("a number decoded as a state")
	}
}

func TestPartJSON(t *testing.T) {
	contentKeys := []string{"text", "raw", "url", "data"}
	for _, p := range everyPartKind() {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, k := range contentKeys {
			if _, ok := obj[k]; ok {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s has %d content keys, want exactly one", b, n)
		}
		var back part
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(back, p) {
			t.Errorf("round trip of %s:\n got %s", b, asJSON(back))
		}
	}
	if _, err := json.Marshal(part{}); err == nil {
		t.Error("a part without content encoded")
	}
	// A null data part is written as an empty object rather than dropped.
	if b, err := json.Marshal(part{Kind: partData}); err != nil || string(b) != `{"data":{}}` {
		t.Errorf("null data part: %s, %v", b, err)
	}

	for _, in := range []string{`{}`, `{"data":null}`, `{"mediaType":"text/plain"}`, `{"raw":"***"}`, `[]`, `{"text":5}`} {
		var p part
		if err := json.Unmarshal([]byte(in), &p); err == nil {
			t.Errorf("%s decoded as %+v, want an error", in, p)
		}
	}

	bin := []byte{0xfb, 0xff, 0xfe, 0x00, 0x3e, 0x3f}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		s := enc.EncodeToString(bin)
		var p part
		if err := json.Unmarshal([]byte(`{"raw":"`+s+`","filename":"f"}`), &p); err != nil {
			t.Fatalf("raw %q: %v", s, err)
		}
		if p.Kind != partRaw || string(p.Raw) != string(bin) || p.Filename != "f" {
			t.Errorf("raw %q decoded as %+v", s, p)
		}
	}
	if !strings.ContainsAny(base64.StdEncoding.EncodeToString(bin), "+/") || !strings.ContainsAny(base64.URLEncoding.EncodeToString(bin), "-_") {
		t.Fatal("the test bytes do not tell the alphabets apart")
	}
}

// A data part's media type survives v0.3, which has no field for it, through the part's metadata: an agenthost that
// speaks v0.3 to another still tells the answer details apart.
func TestV03DataMediaType(t *testing.T) {
	for _, data := range []string{`{"references":[]}`, `[1,2]`} {
		m := message{MessageID: "m", Role: roleAgent, Parts: []part{{Kind: partData, Data: json.RawMessage(data), MediaType: answerMediaType}}}
		back, shape := viaV03(t, &streamResponse{Message: &m})
		meta := shape["parts"].([]any)[0].(map[string]any)["metadata"].(map[string]any)
		if meta[mediaTypeKey] != answerMediaType {
			t.Errorf("%s: v0.3 metadata %v", data, meta)
		}
		got := back.Message.Parts[0]
		if got.MediaType != answerMediaType || string(got.Data) != data || got.Metadata != nil {
			t.Errorf("%s: read back as %+v (metadata %s)", data, got, got.Metadata)
		}
	}
}
