package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestMain lets the test binary serve a dataset's tools, as the toolrank binary does: the measurement's MCP server
// is this binary run as "serve ...".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		if err := serve(context.Background(), os.Args[2:], os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "toolrank serve:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRecallTarget runs the measurement on every evaluation question of the three datasets: agenthost's ranking, as
// built by the composition root and searched through the ToolManager, finds the answer in its first 5 at least
// 1.15 times as often as plain BM25 over name and description, overall (micro-average), and is no worse on any one
// dataset.
func TestRecallTarget(t *testing.T) {
	data, err := filepath.Abs(defaultData)
	if err != nil {
		t.Fatal(err)
	}
	c, err := loadCorpus(data)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := measure(t.Context(), c, "eval", []string{os.Args[0], "serve", "-data", data})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d datasets measured, want 3", len(rs))
	}
	var report strings.Builder
	if err := write(&report, c, "eval", rs); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", report.String())
	for _, r := range rs {
		if r.questions < 150 || r.base[1] == 0 {
			t.Errorf("%s: %d questions, baseline found %d: the data is not what it should be", r.dataset, r.questions, r.base[1])
		}
		if r.agenthost[1] < r.base[1] {
			t.Errorf("%s: agenthost found %d answers in its first 5, the baseline %d", r.dataset, r.agenthost[1], r.base[1])
		}
	}
	if all := total(rs); all.ratio() < 1.15 {
		t.Errorf("overall recall@5: agenthost %.3f, baseline %.3f: %.2f×, want at least 1.15×", all.recall(all.agenthost[1]), all.recall(all.base[1]), all.ratio())
	}
}

func TestBaseline(t *testing.T) {
	tools := []tool{
		{Name: "resnet50", Description: "Image classification: a residual network trained on ImageNet."},
		{Name: "silero_stt", Description: "Speech to text: transcribes spoken audio in English, German and Spanish."},
		{Name: "midas", Description: "Depth estimation: the relative inverse depth of a single image."},
		{Name: "yolo", Description: "Object detection: finds objects in an image, in real time."},
	}
	b := newBaseline(tools)
	for _, tc := range []struct {
		query string
		want  []int
	}{
		{"Transcribe this SPEECH recording to text", []int{1}},
		{"estimate the depth of a photo", []int{2, 0}},    // no stop words: "a" is a word of resnet50's too
		{"detect objects in an image", []int{3, 1, 0, 2}}, // "objects" in yolo only; "in" of silero_stt outweighs "image"
		{"classifying images", nil},                       // no stemming: neither "classifying" nor "images" is a word of any tool
		{"image image image", []int{0, 2, 3}},             // a word said thrice counts once; the shortest text first
		{"resnet50", []int{0}},                            // the name counts
	} {
		if got := b.search(tc.query, 5); !slices.Equal(got, tc.want) {
			t.Errorf("search(%q) = %v, want %v", tc.query, got, tc.want)
		}
	}
	if got := b.search("image", 1); len(got) != 1 {
		t.Errorf("search with limit 1 = %v", got)
	}
}

func TestInstruction(t *testing.T) {
	for _, tc := range []struct{ code, want string }{
		{"###Instruction: What can classify\n sports videos?\n###Output: {'domain': 'Video'}", "What can classify sports videos?"},
		{"### Instruction: Find objects.\n### Output: <<<domain>>>", "Find objects."},
		{"{'Instruction': I need depth maps., 'Output': {'domain': 'Classification'}}", "I need depth maps."},
		{"no instruction here", ""},
	} {
		if got := instruction(tc.code); got != tc.want {
			t.Errorf("instruction(%q) = %q, want %q", tc.code, got, tc.want)
		}
	}
}

func TestInputSchema(t *testing.T) {
	for _, tc := range []struct {
		args string
		want []string // the properties' names, sorted
	}{
		{`{"pretrained": "True", "repo_or_dir": "snakers4/silero-models"}`, []string{"pretrained", "repo_or_dir"}},
		{`["input_text", "output: A tensor of shape (n, 512)", "not a name!"]`, []string{"input_text", "output"}},
		{`"pretrained, model_name"`, []string{"model_name", "pretrained"}},
		{`null`, nil},
	} {
		var s struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(inputSchema(json.RawMessage(tc.args)), &s); err != nil {
			t.Fatal(err)
		}
		if got := sortedNames(s.Properties); s.Type != "object" || !slices.Equal(got, tc.want) {
			t.Errorf("inputSchema(%s) = %s %v, want object %v", tc.args, s.Type, got, tc.want)
		}
	}
}

func sortedNames(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestConvert runs the converter on a git repository laid out as gorilla's: one tool per distinct call, described
// without the call, named uniquely through the sanitiser; questions answered by their call, or by the function and
// model it loads when it adds arguments, and dropped when no single API matches.
func TestConvert(t *testing.T) {
	dir := t.TempDir()
	api := func(name, call, desc string) string {
		b, _ := json.Marshal(map[string]any{"domain": "Image Classification", "functionality": "Classify images", "api_name": name,
			"api_call": call, "api_arguments": map[string]string{"pretrained": "True"}, "description": desc})
		return string(b)
	}
	q := func(text, call string) string {
		b, _ := json.Marshal(map[string]string{"code": "###Instruction: " + text + "\n###Output: {'api_call': '" + call + "'}", "api_call": call})
		return string(b)
	}
	files := map[string][]string{
		"data/api/torchhub_api.jsonl": {
			api("resnet", "torch.hub.load(repo_or_dir='pytorch/vision', model='resnet50', pretrained=True)", "A residual network."),
			api("resnet", "torch.hub.load(repo_or_dir='pytorch/vision', model='resnet18', pretrained=True)", "A smaller residual network."),
			api("resnet again", `torch.hub.load(repo_or_dir="pytorch/vision",  model="resnet50", pretrained=True)`, "The same call again."),
		},
		"data/apibench/torchhub_eval.json": {
			q("Classify my photos.", "torch.hub.load(repo_or_dir='pytorch/vision', model='resnet50', pretrained=True)"),
			q("Classify on a phone.", "torch.hub.load(repo_or_dir='pytorch/vision', model='resnet18', pretrained=True)"),
			q("Nothing matches.", "torch.hub.load(repo_or_dir='pytorch/vision', model='vgg', pretrained=True)"),
		},
		"data/apibench/torchhub_train.json": {
			`{"code": "{'Instruction': Label pictures., 'Output': {}}", "api_call": "torch.hub.load(repo_or_dir='pytorch/vision', model='resnet18', pretrained=True)"}`,
		},
		"data/api/tensorflowhub_api.jsonl":   {api("mobilenet/v2", "hub.KerasLayer('https://tfhub.dev/mobilenet_v2/4')", "MobileNet.")},
		"data/apibench/tensorflow_eval.json": {q("Features of images.", "hub.KerasLayer('https://tfhub.dev/mobilenet_v2/4')")},
		"data/api/huggingface_api.jsonl":     {api("stabilityai/sd-2", "Pipeline.from_pretrained('stabilityai/sd-2')", "Diffusion.")},
		"data/apibench/huggingface_eval.json": {
			q("Draw a cat.", "Pipeline.from_pretrained('stabilityai/sd-2', torch_dtype=torch.float16)"),
			`{"code": "no instruction", "api_call": "Pipeline.from_pretrained('stabilityai/sd-2')"}`,
		},
		"LICENSE": {"Apache License"},
	}
	for path, lines := range files {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "data"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitDir := filepath.Join(dir, ".git")
	c, err := convert(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^github\.com/ShishirPatil/gorilla@[0-9a-f]{40}$`).MatchString(c.Source) || len(c.Datasets) != 3 {
		t.Fatalf("corpus %s with %d datasets", c.Source, len(c.Datasets))
	}
	th := c.Datasets[0]
	var names []string
	for _, tl := range th.Tools {
		names = append(names, tl.Name)
		if strings.Contains(tl.Description, "torch.hub") || strings.Contains(tl.Description, "pytorch/vision") {
			t.Errorf("description %q has the call", tl.Description)
		}
	}
	if !slices.Equal(names, []string{"resnet", "resnet_2"}) {
		t.Errorf("torchhub tools %q, want resnet and resnet_2 (the third record repeats the first call)", names)
	}
	if want := "Image Classification: Classify images. A residual network."; th.Tools[0].Description != want {
		t.Errorf("description %q, want %q", th.Tools[0].Description, want)
	}
	if want := []question{{"Classify my photos.", 0}, {"Classify on a phone.", 1}}; !slices.Equal(th.Eval, want) || th.Dropped["eval"] != 1 {
		t.Errorf("torchhub eval %v, %d dropped; want %v, 1 dropped", th.Eval, th.Dropped["eval"], want)
	}
	if want := []question{{"Label pictures.", 1}}; !slices.Equal(th.Train, want) {
		t.Errorf("torchhub train %v, want %v", th.Train, want)
	}
	if tf := c.Datasets[1]; tf.Tools[0].Name != "mobilenet_v2" || len(tf.Eval) != 1 {
		t.Errorf("tensorflowhub %+v", tf)
	}
	if hf := c.Datasets[2]; len(hf.Eval) != 1 || hf.Eval[0].Answer != 0 || hf.Dropped["eval"] != 1 {
		t.Errorf("huggingface eval %v, %d dropped: want the call with an added argument matched, the question without an instruction dropped", hf.Eval, hf.Dropped["eval"])
	}

	// The command writes the copy and the licence, and the copy reads back the same.
	out := filepath.Join(t.TempDir(), "apibench.json.gz")
	var stdout strings.Builder
	if err := run(t.Context(), []string{"-convert", gitDir, "-data", out}, &stdout, &stdout); err != nil {
		t.Fatal(err)
	}
	back, err := loadCorpus(out)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustJSON(t, back), mustJSON(t, c); a != b {
		t.Errorf("the copy reads back as\n%s\nwant\n%s", a, b)
	}
	if lic, err := os.ReadFile(filepath.Join(filepath.Dir(out), "LICENSE")); err != nil || string(lic) != "Apache License\n" {
		t.Errorf("LICENSE %q, %v", lic, err)
	}
	if !strings.Contains(stdout.String(), "torchhub: 2 tools, 2 eval questions (1 dropped), 1 train questions (0 dropped)") {
		t.Errorf("convert says %q", stdout.String())
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRunFlags(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"-split", "test"}, &out, &out); err == nil {
		t.Error("-split test: no error")
	}
	if err := run(t.Context(), []string{"serve", "-dataset", "nosuch", "-data", defaultData}, &out, &out); err == nil || !strings.Contains(err.Error(), `no dataset "nosuch"`) {
		t.Errorf("serve -dataset nosuch: %v", err)
	}
}
