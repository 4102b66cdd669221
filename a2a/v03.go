package a2a

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// The v0.3 dialect. Its objects carry a "kind", its roles and states are lower case, its parts are text, file (bytes
// or uri) or data (an object), and its status events say whether they are the last ("final"). They are converted to
// and from the package's v1.0 model here, and nowhere else.

type v03Message struct {
	Kind             string          `json:"kind"`
	MessageID        string          `json:"messageId"`
	Role             string          `json:"role"`
	Parts            []v03Part       `json:"parts"`
	ContextID        string          `json:"contextId,omitempty"`
	TaskID           string          `json:"taskId,omitempty"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	Extensions       []string        `json:"extensions,omitempty"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds,omitempty"`
}

type v03Part struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	File     *v03File        `json:"file,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

type v03File struct {
	Bytes    *string `json:"bytes,omitempty"` // a pointer: an empty file has "bytes": ""
	URI      string  `json:"uri,omitempty"`
	MimeType string  `json:"mimeType,omitempty"`
	Name     string  `json:"name,omitempty"`
}

type v03Task struct {
	Kind      string          `json:"kind"`
	ID        string          `json:"id"`
	ContextID string          `json:"contextId"`
	Status    v03Status       `json:"status"`
	Artifacts []v03Artifact   `json:"artifacts,omitempty"`
	History   []v03Message    `json:"history,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

type v03Status struct {
	State     string      `json:"state"`
	Message   *v03Message `json:"message,omitempty"`
	Timestamp string      `json:"timestamp,omitempty"`
}

type v03Artifact struct {
	ArtifactID  string          `json:"artifactId"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parts       []v03Part       `json:"parts"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	Extensions  []string        `json:"extensions,omitempty"`
}

type v03StatusUpdate struct {
	Kind      string          `json:"kind"`
	TaskID    string          `json:"taskId"`
	ContextID string          `json:"contextId"`
	Status    v03Status       `json:"status"`
	Final     bool            `json:"final"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

type v03ArtifactUpdate struct {
	Kind      string          `json:"kind"`
	TaskID    string          `json:"taskId"`
	ContextID string          `json:"contextId"`
	Artifact  v03Artifact     `json:"artifact"`
	Append    bool            `json:"append,omitempty"`
	LastChunk bool            `json:"lastChunk,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// sendParamsV03 are the params of message/send and message/stream.
type sendParamsV03 struct {
	Message       v03Message      `json:"message"`
	Configuration *sendConfigV03  `json:"configuration,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
}

type sendConfigV03 struct {
	AcceptedOutputModes []string        `json:"acceptedOutputModes"`
	HistoryLength       *int            `json:"historyLength,omitempty"`
	Blocking            *bool           `json:"blocking,omitempty"`
	PushConfig          json.RawMessage `json:"pushNotificationConfig,omitempty"`
}

// The v0.3 names of the roles.
func roleToV03(role string) string {
	if role == roleAgent {
		return "agent"
	}
	return "user"
}

func roleFromV03(role string) string {
	switch role {
	case "agent", roleAgent:
		return roleAgent
	}
	return roleUser
}

// dataCompatKey marks a data part whose value was not an object: v0.3 data parts must be objects, so the value is
// wrapped as {"value": x}, as the JS SDK does.
const dataCompatKey = "data_part_compat"

// mediaTypeKey carries a data part's media type in its v0.3 metadata.
const mediaTypeKey = "mediaType"

func partToV03(p part) v03Part {
	out := v03Part{Metadata: p.Metadata}
	switch p.Kind {
	case partText:
		out.Kind, out.Text = "text", &p.Text
	case partRaw:
		b64 := base64.StdEncoding.EncodeToString(p.Raw)
		out.Kind, out.File = "file", &v03File{Bytes: &b64, MimeType: p.MediaType, Name: p.Filename}
	case partURL:
		out.Kind, out.File = "file", &v03File{URI: p.URL, MimeType: p.MediaType, Name: p.Filename}
	case partData:
		out.Kind, out.Data = "data", p.Data
		if d := bytes.TrimSpace(p.Data); len(d) == 0 || d[0] != '{' {
			if len(d) == 0 {
				d = []byte("null")
			}
			out.Data = json.RawMessage(`{"value":` + string(d) + `}`)
			out.Metadata = withMetadata(out.Metadata, dataCompatKey, true)
		}
		if p.MediaType != "" {
			// v0.3 data parts have no media type: it travels in the metadata, so that an agenthost caller still
			// tells its answer details apart.
			out.Metadata = withMetadata(out.Metadata, mediaTypeKey, p.MediaType)
		}
	}
	return out
}

func partFromV03(v v03Part) (part, error) {
	p := part{Metadata: v.Metadata}
	switch {
	case v.Text != nil && (v.Kind == "" || v.Kind == "text"):
		p.Kind, p.Text = partText, *v.Text
	case v.File != nil && (v.Kind == "" || v.Kind == "file"):
		p.MediaType, p.Filename = v.File.MimeType, v.File.Name
		switch {
		case v.File.URI != "":
			p.Kind, p.URL = partURL, v.File.URI
		case v.File.Bytes != nil:
			raw, err := decodeBase64(*v.File.Bytes)
			if err != nil {
				return part{}, fmt.Errorf("file part bytes: %w", err)
			}
			p.Kind, p.Raw = partRaw, raw
		default:
			return part{}, errors.New("file part has neither bytes nor uri")
		}
	case len(v.Data) > 0 && (v.Kind == "" || v.Kind == "data"):
		p.Kind, p.Data = partData, v.Data
		if metadataFlag(v.Metadata, dataCompatKey) {
			var wrapped struct {
				Value json.RawMessage `json:"value"`
			}
			if json.Unmarshal(v.Data, &wrapped) == nil && len(wrapped.Value) > 0 {
				p.Data = wrapped.Value
			}
			p.Metadata = withoutMetadata(p.Metadata, dataCompatKey) // the flag is the wrapping's, not the part's
		}
		var meta struct {
			MediaType string `json:"mediaType"`
		}
		if json.Unmarshal(p.Metadata, &meta) == nil && meta.MediaType != "" {
			p.MediaType, p.Metadata = meta.MediaType, withoutMetadata(p.Metadata, mediaTypeKey)
		}
	default:
		return part{}, fmt.Errorf("part of kind %q has no content of that kind", v.Kind)
	}
	return p, nil
}

func partsToV03(parts []part) []v03Part {
	out := make([]v03Part, len(parts))
	for i, p := range parts {
		out[i] = partToV03(p)
	}
	return out
}

func partsFromV03(parts []v03Part) ([]part, error) {
	out := make([]part, len(parts))
	for i, v := range parts {
		p, err := partFromV03(v)
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
		out[i] = p
	}
	return out, nil
}

func messageToV03(m message) v03Message {
	return v03Message{
		Kind: "message", MessageID: m.MessageID, Role: roleToV03(m.Role), Parts: partsToV03(m.Parts),
		ContextID: m.ContextID, TaskID: m.TaskID, Metadata: m.Metadata, Extensions: m.Extensions, ReferenceTaskIDs: m.ReferenceTaskIDs,
	}
}

func messageFromV03(v v03Message) (message, error) {
	parts, err := partsFromV03(v.Parts)
	if err != nil {
		return message{}, err
	}
	return message{
		MessageID: v.MessageID, Role: roleFromV03(v.Role), Parts: parts,
		ContextID: v.ContextID, TaskID: v.TaskID, Metadata: v.Metadata, Extensions: v.Extensions, ReferenceTaskIDs: v.ReferenceTaskIDs,
	}, nil
}

func statusToV03(s taskStatus) v03Status {
	out := v03Status{State: s.State.short(), Timestamp: s.Timestamp}
	if s.State == stateUnspecified || s.State == "" {
		out.State = "unknown"
	}
	if s.Message != nil {
		m := messageToV03(*s.Message)
		out.Message = &m
	}
	return out
}

func statusFromV03(v v03Status) (taskStatus, error) {
	out := taskStatus{State: parseState(v.State), Timestamp: v.Timestamp}
	if v.Message != nil {
		m, err := messageFromV03(*v.Message)
		if err != nil {
			return taskStatus{}, fmt.Errorf("status message: %w", err)
		}
		out.Message = &m
	}
	return out, nil
}

func artifactToV03(a artifact) v03Artifact {
	return v03Artifact{ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description, Parts: partsToV03(a.Parts), Metadata: a.Metadata, Extensions: a.Extensions}
}

func artifactFromV03(v v03Artifact) (artifact, error) {
	parts, err := partsFromV03(v.Parts)
	if err != nil {
		return artifact{}, fmt.Errorf("artifact %q: %w", v.ArtifactID, err)
	}
	return artifact{ArtifactID: v.ArtifactID, Name: v.Name, Description: v.Description, Parts: parts, Metadata: v.Metadata, Extensions: v.Extensions}, nil
}

func taskToV03(t task) v03Task {
	out := v03Task{Kind: "task", ID: t.ID, ContextID: t.ContextID, Status: statusToV03(t.Status), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, artifactToV03(a))
	}
	for _, m := range t.History {
		out.History = append(out.History, messageToV03(m))
	}
	return out
}

func taskFromV03(v v03Task) (task, error) {
	status, err := statusFromV03(v.Status)
	if err != nil {
		return task{}, err
	}
	out := task{ID: v.ID, ContextID: v.ContextID, Status: status, Metadata: v.Metadata}
	for _, va := range v.Artifacts {
		a, err := artifactFromV03(va)
		if err != nil {
			return task{}, err
		}
		out.Artifacts = append(out.Artifacts, a)
	}
	for _, vm := range v.History {
		m, err := messageFromV03(vm)
		if err != nil {
			return task{}, fmt.Errorf("history: %w", err)
		}
		out.History = append(out.History, m)
	}
	return out, nil
}

// toV03 returns the v0.3 object of an event or result: a bare Task, Message or event with its kind.
func (r *streamResponse) toV03() any {
	switch {
	case r.Task != nil:
		return taskToV03(*r.Task)
	case r.Message != nil:
		return messageToV03(*r.Message)
	case r.StatusUpdate != nil:
		u := r.StatusUpdate
		return v03StatusUpdate{Kind: "status-update", TaskID: u.TaskID, ContextID: u.ContextID, Status: statusToV03(u.Status), Final: u.Final, Metadata: u.Metadata}
	case r.ArtifactUpdate != nil:
		u := r.ArtifactUpdate
		return v03ArtifactUpdate{Kind: "artifact-update", TaskID: u.TaskID, ContextID: u.ContextID, Artifact: artifactToV03(u.Artifact), Append: u.Append, LastChunk: u.LastChunk, Metadata: u.Metadata}
	}
	return nil
}

// decodeV03 reads a v0.3 result or event: a Task, Message, status-update or artifact-update, told apart by its kind,
// or by its fields when a peer leaves the kind out.
func decodeV03(b []byte) (*streamResponse, error) {
	var probe struct {
		Kind      string          `json:"kind"`
		MessageID *string         `json:"messageId"`
		Artifact  json.RawMessage `json:"artifact"`
		TaskID    *string         `json:"taskId"`
		Status    json.RawMessage `json:"status"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, err
	}
	kind := probe.Kind
	if kind == "" {
		switch {
		case probe.Artifact != nil:
			kind = "artifact-update"
		case probe.Status != nil && probe.TaskID != nil:
			kind = "status-update"
		case probe.Status != nil:
			kind = "task"
		case probe.MessageID != nil:
			kind = "message"
		}
	}
	out := &streamResponse{}
	switch kind {
	case "task":
		var v v03Task
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
		t, err := taskFromV03(v)
		if err != nil {
			return nil, err
		}
		out.Task = &t
	case "message":
		var v v03Message
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
		m, err := messageFromV03(v)
		if err != nil {
			return nil, err
		}
		out.Message = &m
	case "status-update":
		var v v03StatusUpdate
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
		s, err := statusFromV03(v.Status)
		if err != nil {
			return nil, err
		}
		out.StatusUpdate = &statusUpdate{TaskID: v.TaskID, ContextID: v.ContextID, Status: s, Metadata: v.Metadata, Final: v.Final}
	case "artifact-update":
		var v v03ArtifactUpdate
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
		a, err := artifactFromV03(v.Artifact)
		if err != nil {
			return nil, err
		}
		out.ArtifactUpdate = &artifactUpdate{TaskID: v.TaskID, ContextID: v.ContextID, Artifact: a, Append: v.Append, LastChunk: v.LastChunk, Metadata: v.Metadata}
	default:
		return nil, fmt.Errorf("unknown v0.3 object (kind %q)", probe.Kind)
	}
	return out, nil
}

// withMetadata returns meta with key set to value. Metadata that is not an object is replaced.
func withMetadata(meta json.RawMessage, key string, value any) json.RawMessage {
	m := map[string]any{}
	_ = json.Unmarshal(meta, &m)
	if m == nil {
		m = map[string]any{}
	}
	m[key] = value
	b, _ := json.Marshal(m) // decoded JSON and a plain value: cannot fail
	return b
}

// withoutMetadata returns meta, an object, without key; nil when nothing is left.
func withoutMetadata(meta json.RawMessage, key string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return meta
	}
	delete(m, key)
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m) // decoded JSON: cannot fail
	return b
}

// metadataFlag reports whether meta is an object whose key is true.
func metadataFlag(meta json.RawMessage, key string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(meta, &m) == nil && string(m[key]) == "true"
}
