package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/host"
)

// This file is the data: APIBench's APIs as tools and its questions as queries with their answers, derived from a
// git directory of ShishirPatil/gorilla (-convert) into testdata/apibench.json.gz.

// The compact copy, as the converter writes it and the measurement reads it.
type (
	corpus struct {
		Source   string     `json:"source"` // repository and commit it was derived from
		Datasets []*dataset `json:"datasets"`
	}
	dataset struct {
		Name  string `json:"name"` // the MCP server's name: the tools' source
		Tools []tool `json:"tools"`
		// Eval and Train are the questions; Train only where the source has it (torchhub).
		Eval  []question `json:"eval"`
		Train []question `json:"train,omitempty"`
		// Dropped counts the questions of each split without a unique answer among the tools.
		Dropped map[string]int `json:"dropped,omitempty"`
	}
	tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	question struct {
		Query  string `json:"q"`
		Answer int    `json:"a"` // the index of the answer in Tools
	}
)

// defaultData is the compact copy, relative to the package's directory.
const defaultData = "testdata/apibench.json.gz"

// source is one dataset's files in the gorilla repository.
type source struct {
	name  string
	apis  string
	eval  string
	train string // "" when the repository has none
}

var sources = []source{
	{"torchhub", "data/api/torchhub_api.jsonl", "data/apibench/torchhub_eval.json", "data/apibench/torchhub_train.json"},
	{"tensorflowhub", "data/api/tensorflowhub_api.jsonl", "data/apibench/tensorflow_eval.json", ""},
	{"huggingface", "data/api/huggingface_api.jsonl", "data/apibench/huggingface_eval.json", ""},
}

// loadCorpus reads the compact copy at path.
func loadCorpus(path string) (*corpus, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var c corpus
	if err := json.NewDecoder(zr).Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, d := range c.Datasets {
		for _, q := range append(d.Eval, d.Train...) {
			if q.Answer < 0 || q.Answer >= len(d.Tools) {
				return nil, fmt.Errorf("%s: %s: answer %d out of range", path, d.Name, q.Answer)
			}
		}
	}
	return &c, nil
}

// writeCorpus writes c, gzipped, to path.
func writeCorpus(c *corpus, path string) error {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(zw)
	if err := enc.Encode(c); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// convert derives the corpus from the git directory of a gorilla repository, at its HEAD.
func convert(gitDir string) (*corpus, error) {
	commit, err := gitOutput(gitDir, "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	c := &corpus{Source: "github.com/ShishirPatil/gorilla@" + strings.TrimSpace(string(commit))}
	for _, s := range sources {
		d, err := convertDataset(gitDir, s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		c.Datasets = append(c.Datasets, d)
	}
	return c, nil
}

func gitOutput(gitDir string, args ...string) ([]byte, error) {
	out, err := exec.Command("git", append([]string{"--git-dir", gitDir}, args...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// apiRecord is what the converter reads of an API.
type apiRecord struct {
	Domain        text            `json:"domain"`
	Functionality text            `json:"functionality"`
	APIName       text            `json:"api_name"`
	APICall       text            `json:"api_call"`
	APIArguments  json.RawMessage `json:"api_arguments"`
	Description   text            `json:"description"`
}

// text is a field that most records give as a string and a few as a list of strings (joined with ", ") or null.
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*t = text(s)
		return nil
	}
	var list []string
	if json.Unmarshal(b, &list) == nil {
		*t = text(strings.Join(list, ", "))
		return nil
	}
	*t = ""
	return nil
}

// questionRecord is what the converter reads of a question.
type questionRecord struct {
	Code    string `json:"code"`
	APICall string `json:"api_call"`
}

// jsonLines decodes each non-blank line of the file at path in the repository.
func jsonLines[T any](gitDir, path string) ([]T, error) {
	b, err := gitOutput(gitDir, "show", "HEAD:"+path)
	if err != nil {
		return nil, err
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// convertDataset turns one dataset's APIs into tools and its questions into queries with answers.
//
// An API is its call: the files list some calls many times (TensorFlow Hub's MobileNet feature vector 220 times,
// with descriptions written anew each time), so each distinct call is one tool, described by its first record.
// Otherwise nearly every TensorFlow Hub question would have several right answers.
func convertDataset(gitDir string, s source) (*dataset, error) {
	apis, err := jsonLines[apiRecord](gitDir, s.apis)
	if err != nil {
		return nil, err
	}
	d := &dataset{Name: s.name, Dropped: map[string]int{}}
	byCall := map[string]int{}
	byLoose := map[string][]int{}
	names := map[string]bool{}
	for _, a := range apis {
		key := callKey(string(a.APICall))
		if _, ok := byCall[key]; ok || key == "" {
			continue
		}
		byCall[key] = len(d.Tools)
		if lk := looseCallKey(string(a.APICall)); lk != "" {
			byLoose[lk] = append(byLoose[lk], len(d.Tools))
		}
		d.Tools = append(d.Tools, tool{Name: uniqueName(string(a.APIName), names), Description: describe(a), InputSchema: inputSchema(a.APIArguments)})
	}
	for _, split := range []struct {
		name string
		path string
		into *[]question
	}{{"eval", s.eval, &d.Eval}, {"train", s.train, &d.Train}} {
		if split.path == "" {
			continue
		}
		qs, err := jsonLines[questionRecord](gitDir, split.path)
		if err != nil {
			return nil, err
		}
		for _, q := range qs {
			answer, ok := byCall[callKey(q.APICall)]
			if !ok {
				// The question's call may carry arguments its API's record does not
				// (torch_dtype=...): the function and the model it names still say which API it is.
				if m := byLoose[looseCallKey(q.APICall)]; len(m) == 1 {
					answer, ok = m[0], true
				}
			}
			text := instruction(q.Code)
			if !ok || text == "" {
				d.Dropped[split.name]++
				continue
			}
			*split.into = append(*split.into, question{Query: text, Answer: answer})
		}
	}
	return d, nil
}

// callKey is a call without its white space and with one kind of quote.
func callKey(call string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(call), ""), `"`, "'")
}

var firstLiteral = regexp.MustCompile(`'[^']*'`)

// looseCallKey is a call's function and its first quoted argument (the model it loads); "" when it has none.
func looseCallKey(call string) string {
	k := callKey(call)
	fn, _, ok := strings.Cut(k, "(")
	lit := firstLiteral.FindString(k)
	if !ok || lit == "" {
		return ""
	}
	return fn + "(" + lit
}

// instructionText matches a question's text in the evaluation files' form ("###Instruction: ... ###Output: ...",
// sometimes with a space after "###") and the training file's ("{'Instruction': ..., 'Output': ...}").
var instructionText = regexp.MustCompile(`(?s)(?:###\s*Instruction:|'Instruction':)(.*?)(?:###\s*Output|,\s*'Output':|$)`)

// instruction is a question's text: the instruction, without the reference output; "" when there is none.
func instruction(code string) string {
	m := instructionText.FindStringSubmatch(code)
	if m == nil {
		return ""
	}
	return strings.Join(strings.Fields(m[1]), " ")
}

// uniqueName is the tool name of an API: its name through agenthost's sanitiser, with a number when taken.
func uniqueName(apiName string, taken map[string]bool) string {
	base := host.ToolName("", strings.TrimSpace(apiName))
	name := base
	for n := 2; taken[name]; n++ {
		name = host.ToolName("", base+"_"+strconv.Itoa(n))
	}
	taken[name] = true
	return name
}

// describe writes a tool's description as its author would: the task and what it does, then the API's own
// description. The call (the answer key) stays out.
func describe(a apiRecord) string {
	var parts []string
	head := strings.TrimSpace(string(a.Domain))
	if f := strings.TrimSpace(string(a.Functionality)); f != "" && !strings.Contains(strings.ToLower(head), strings.ToLower(f)) {
		if head != "" {
			head += ": "
		}
		head += f
	}
	if head != "" {
		parts = append(parts, strings.TrimRight(head, ". ")+".")
	}
	if desc := strings.TrimSpace(string(a.Description)); desc != "" {
		parts = append(parts, desc)
	}
	return strings.Join(parts, " ")
}

var paramName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// inputSchema is a JSON Schema object of the API's arguments. The records give them as an object of names to
// example values, a list of names (some "name: what it is"), or a comma-separated string; the values are examples
// (some are the model the call loads), so only names and written descriptions are kept.
func inputSchema(raw json.RawMessage) json.RawMessage {
	type prop struct {
		Type        string `json:"type"`
		Description string `json:"description,omitempty"`
	}
	props := map[string]prop{}
	add := func(item string) {
		name, desc, _ := strings.Cut(item, ":")
		name = strings.TrimSpace(name)
		if paramName.MatchString(name) && len(props) < 16 {
			props[name] = prop{Type: "string", Description: strings.TrimSpace(desc)}
		}
	}
	var obj map[string]json.RawMessage
	var list []any
	var str string
	switch {
	case json.Unmarshal(raw, &obj) == nil && obj != nil:
		for name := range obj {
			add(name)
		}
	case json.Unmarshal(raw, &list) == nil:
		for _, item := range list {
			if s, ok := item.(string); ok {
				add(s)
			}
		}
	case json.Unmarshal(raw, &str) == nil:
		for item := range strings.SplitSeq(str, ",") {
			add(item)
		}
	}
	schema, err := json.Marshal(map[string]any{"type": "object", "properties": props})
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return schema
}

// copyLicense writes the repository's LICENSE to path.
func copyLicense(gitDir, path string) error {
	b, err := gitOutput(gitDir, "show", "HEAD:LICENSE")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
