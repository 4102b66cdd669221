package a2a

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The A2A objects, in the shape of v1.0's ProtoJSON. They are the package's own model: v0.3 objects are converted
// to and from them at the edge (v03.go), and none of them leaves the package.

// Roles.
const (
	roleUser  = "ROLE_USER"
	roleAgent = "ROLE_AGENT"
)

// taskState is a task's state, as v1.0 names it.
type taskState string

const (
	stateUnspecified   taskState = "TASK_STATE_UNSPECIFIED"
	stateSubmitted     taskState = "TASK_STATE_SUBMITTED"
	stateWorking       taskState = "TASK_STATE_WORKING"
	stateCompleted     taskState = "TASK_STATE_COMPLETED"
	stateFailed        taskState = "TASK_STATE_FAILED"
	stateCanceled      taskState = "TASK_STATE_CANCELED"
	stateInputRequired taskState = "TASK_STATE_INPUT_REQUIRED"
	stateRejected      taskState = "TASK_STATE_REJECTED"
	stateAuthRequired  taskState = "TASK_STATE_AUTH_REQUIRED"
)

// terminal reports whether nothing more happens to a task in state s.
func (s taskState) terminal() bool {
	switch s {
	case stateCompleted, stateFailed, stateCanceled, stateRejected:
		return true
	}
	return false
}

// interrupted reports whether a task in state s waits for its caller.
func (s taskState) interrupted() bool { return s == stateInputRequired || s == stateAuthRequired }

// short is the state's name without its prefix, in lower case with dashes: v0.3's name.
func (s taskState) short() string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_")), "_", "-")
}

// parseState reads a state written either way: "TASK_STATE_INPUT_REQUIRED" or v0.3's "input-required". Anything
// else is stateUnspecified.
func parseState(s string) taskState {
	up := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "-", "_"))
	if !strings.HasPrefix(up, "TASK_STATE_") {
		up = "TASK_STATE_" + up
	}
	switch st := taskState(up); st {
	case stateSubmitted, stateWorking, stateCompleted, stateFailed, stateCanceled, stateInputRequired, stateRejected, stateAuthRequired:
		return st
	}
	return stateUnspecified
}

// UnmarshalJSON accepts either spelling of a state (see parseState).
func (s *taskState) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("task state: %w", err)
	}
	*s = parseState(str)
	return nil
}

// message is a Message: one turn of a conversation.
type message struct {
	MessageID        string          `json:"messageId"`
	Role             string          `json:"role"`
	Parts            []part          `json:"parts"`
	ContextID        string          `json:"contextId,omitempty"`
	TaskID           string          `json:"taskId,omitempty"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	Extensions       []string        `json:"extensions,omitempty"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds,omitempty"`
}

// partKind says which one of a part's contents it holds.
type partKind int

const (
	partText partKind = iota + 1
	partRaw
	partURL
	partData
)

// part is a Part: exactly one of text, raw bytes, a URL or a JSON value, with optional media type, file name and
// metadata. Its JSON is v1.0's, where the content's key says its kind.
type part struct {
	Kind      partKind
	Text      string
	Raw       []byte
	URL       string
	Data      json.RawMessage
	MediaType string
	Filename  string
	Metadata  json.RawMessage
}

func textPart(s string) part { return part{Kind: partText, Text: s} }

// partJSON is a part as JSON: the union of its possible keys.
type partJSON struct {
	Text      *string         `json:"text,omitempty"`
	Raw       *string         `json:"raw,omitempty"`
	URL       *string         `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

func (p part) MarshalJSON() ([]byte, error) {
	j := partJSON{MediaType: p.MediaType, Filename: p.Filename, Metadata: p.Metadata}
	switch p.Kind {
	case partText:
		j.Text = &p.Text
	case partRaw:
		s := base64.StdEncoding.EncodeToString(p.Raw)
		j.Raw = &s
	case partURL:
		j.URL = &p.URL
	case partData:
		j.Data = p.Data
		if len(bytes.TrimSpace(j.Data)) == 0 || bytes.Equal(bytes.TrimSpace(j.Data), []byte("null")) {
			j.Data = json.RawMessage(`{}`) // a null data part is dropped by some readers
		}
	default:
		return nil, errors.New("a2a: part has no content")
	}
	return json.Marshal(j)
}

func (p *part) UnmarshalJSON(b []byte) error {
	var j partJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = part{MediaType: j.MediaType, Filename: j.Filename, Metadata: j.Metadata}
	switch {
	case j.Text != nil:
		p.Kind, p.Text = partText, *j.Text
	case j.Raw != nil:
		raw, err := decodeBase64(*j.Raw)
		if err != nil {
			return fmt.Errorf("part raw: %w", err)
		}
		p.Kind, p.Raw = partRaw, raw
	case j.URL != nil:
		p.Kind, p.URL = partURL, *j.URL
	case len(j.Data) > 0 && !bytes.Equal(j.Data, []byte("null")):
		p.Kind, p.Data = partData, j.Data
	default:
		return errors.New("part has none of text, raw, url or data")
	}
	return nil
}

// decodeBase64 reads standard or URL-safe base64, padded or not: ProtoJSON writers use the first, readers accept
// both.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// task is a Task: one unit of work an agent does for a message.
type task struct {
	ID        string          `json:"id"`
	ContextID string          `json:"contextId"`
	Status    taskStatus      `json:"status"`
	Artifacts []artifact      `json:"artifacts,omitempty"`
	History   []message       `json:"history,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

type taskStatus struct {
	State     taskState `json:"state"`
	Message   *message  `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

// artifact is an Artifact: an output of a task.
type artifact struct {
	ArtifactID  string          `json:"artifactId"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parts       []part          `json:"parts"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	Extensions  []string        `json:"extensions,omitempty"`
}

// statusUpdate is a TaskStatusUpdateEvent. Final exists only in v0.3, where it marks the last event of a stream.
type statusUpdate struct {
	TaskID    string          `json:"taskId"`
	ContextID string          `json:"contextId"`
	Status    taskStatus      `json:"status"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Final     bool            `json:"-"`
}

// artifactUpdate is a TaskArtifactUpdateEvent: a chunk of an artifact. Append adds the chunk's parts to the artifact
// of the same id sent before; without it the chunk replaces that artifact.
type artifactUpdate struct {
	TaskID    string          `json:"taskId"`
	ContextID string          `json:"contextId"`
	Artifact  artifact        `json:"artifact"`
	Append    bool            `json:"append,omitempty"`
	LastChunk bool            `json:"lastChunk,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// streamResponse is one event of a stream, and the result of SendMessage (task or message): exactly one field is
// set.
type streamResponse struct {
	Task           *task           `json:"task,omitempty"`
	Message        *message        `json:"message,omitempty"`
	StatusUpdate   *statusUpdate   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *artifactUpdate `json:"artifactUpdate,omitempty"`
}

func (r *streamResponse) empty() bool {
	return r.Task == nil && r.Message == nil && r.StatusUpdate == nil && r.ArtifactUpdate == nil
}

// sendParams are the params of SendMessage and SendStreamingMessage (and v0.3's message/send and message/stream).
type sendParams struct {
	Message       message         `json:"message"`
	Configuration *sendConfig     `json:"configuration,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	Tenant        string          `json:"tenant,omitempty"`
}

// sendConfig is v1.0's SendMessageConfiguration.
type sendConfig struct {
	AcceptedOutputModes []string        `json:"acceptedOutputModes,omitempty"`
	HistoryLength       *int            `json:"historyLength,omitempty"`
	ReturnImmediately   bool            `json:"returnImmediately,omitempty"`
	PushConfig          json.RawMessage `json:"taskPushNotificationConfig,omitempty"`
}

// taskIDParams are the params of GetTask, CancelTask and SubscribeToTask.
type taskIDParams struct {
	ID            string          `json:"id"`
	HistoryLength *int            `json:"historyLength,omitempty"`
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	Tenant        string          `json:"tenant,omitempty"`
}

// listParams are the params of ListTasks.
type listParams struct {
	ContextID            string    `json:"contextId,omitempty"`
	Status               taskState `json:"status,omitempty"`
	PageSize             *int      `json:"pageSize,omitempty"`
	PageToken            string    `json:"pageToken,omitempty"`
	HistoryLength        *int      `json:"historyLength,omitempty"`
	StatusTimestampAfter string    `json:"statusTimestampAfter,omitempty"`
	IncludeArtifacts     bool      `json:"includeArtifacts,omitempty"`
	Tenant               string    `json:"tenant,omitempty"`
}

type listResult struct {
	Tasks         []task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int    `json:"pageSize"`
	TotalSize     int    `json:"totalSize"`
}

// text returns the text parts of parts joined, for reading a message as a prompt or a question.
func partsText(parts []part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Kind == partText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
