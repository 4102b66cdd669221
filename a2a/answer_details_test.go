package a2a

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

// TestAnswerDetailsOutOfTheParts: an answer served over A2A carries its details in the artifact's metadata, so that a
// client that renders every part (ADK) shows the text and the sources alone, and another agenthost, calling it as a
// peer, still reads them back from the stream's last chunk: the references and the run's summary as its structured
// output. (A task read whole, as polling reads it, is TestPeerFakeAnswerDetailsInMetadata's.)
func TestAnswerDetailsOutOfTheParts(t *testing.T) {
	tools, url := guidePeer(t)
	res, err := tools[0].Call(t.Context(), json.RawMessage(`{"message":"find the guide"}`), host.NewCall("x", "b", "a2a:b", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || strings.Contains(res.Text, "{") || !strings.Contains(res.Text, "See the guide [1].") {
		t.Errorf("the text the model reads: %q, want the answer alone", res.Text)
	}
	var d struct {
		References []host.NumberedReference `json:"references"`
		StoppedBy  string                   `json:"stopped_by"`
		ToolCalls  []struct{ Name string }  `json:"tool_calls"`
	}
	if err := json.Unmarshal(res.Structured, &d); err != nil || len(d.References) != 1 || d.References[0].URI != "https://example.com/guide" ||
		d.StoppedBy != "answered" || len(d.ToolCalls) != 1 || d.ToolCalls[0].Name != "docs" {
		t.Errorf("the structured output %s (%v), want the answer's details", res.Structured, err)
	}

	list := callRPC(t, url, "1.0", "ListTasks", map[string]any{"includeArtifacts": true})
	var tasks listResult
	if list.Error != nil || json.Unmarshal(list.Result, &tasks) != nil || len(tasks.Tasks) != 1 || len(tasks.Tasks[0].Artifacts) != 1 {
		t.Fatalf("ListTasks: %v %s", list.Error, list.Result)
	}
	a := tasks.Tasks[0].Artifacts[0]
	for _, p := range a.Parts {
		if p.Kind != partText && p.Kind != partURL {
			t.Errorf("the answer has a %v part %s: a client that renders every part would show it", p.Kind, asJSON(p))
		}
	}
	if !strings.Contains(string(answerDetails(a.Metadata)), `"stopped_by":"answered"`) {
		t.Errorf("the answer's metadata %s, want the details", a.Metadata)
	}
}

// TestPeerFakeAnswerDetailsInMetadata: the details of an answer artifact's metadata (an agenthost's answer) become
// the structured output, out of the text; a peer's other metadata is left alone.
func TestPeerFakeAnswerDetailsInMetadata(t *testing.T) {
	details := `{"references":[{"number":1,"title":"Guide","uri":"https://example.com/guide"}],"usage":{"requests":2}}`
	f := newFakePeer(t, false, map[string]func(http.ResponseWriter, json.RawMessage, json.RawMessage){
		"SendMessage": func(w http.ResponseWriter, id, _ json.RawMessage) {
			writeRPCResult(w, id, `{"task":`+fakeTask("t1", "COMPLETED", `[{"artifactId":"a1","name":"answer","parts":[{"text":"The answer is 42."}],`+
				`"metadata":{"other":{"x":1},"`+answerMediaType+`":`+details+`}}]`)+`}`)
		},
	})
	h := newFakeLoop(t, f)
	r := h.ask(t, &host.Request{Prompt: "ask the other agenthost"}, callPeer("q", "fake", "the question"), say("42."))
	if got := r.toolMessage(t, "q"); got != "The answer is 42." {
		t.Errorf("the model read %q, want the text only", got)
	}
	res := r.toolEnd(t, "q").Result
	var got, want any
	if res == nil || json.Unmarshal(res.Structured, &got) != nil {
		t.Fatalf("result = %+v, want the details as structured output", res)
	}
	_ = json.Unmarshal([]byte(details), &want)
	if !sameJSON(got, want) {
		t.Errorf("structured = %s, want %s", res.Structured, details)
	}
}
