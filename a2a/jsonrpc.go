package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/internal/httpedge"
)

// JSON-RPC 2.0, as A2A's JSON-RPC binding uses it.

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object. As a Go error it reads "code: message".
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`

	// limit, when set, is the cap that refused the request: the response has its HTTP status and Retry-After.
	limit *httpedge.LimitError
}

// RPCCode implements telemetry.RPCError.
func (e *rpcError) RPCCode() int { return e.Code }

func (e *rpcError) Error() string {
	if name := errorName(e.Code); name != "" {
		return fmt.Sprintf("%s (%d): %s", name, e.Code, e.Message)
	}
	return fmt.Sprintf("error %d: %s", e.Code, e.Message)
}

// The error codes of JSON-RPC and A2A.
const (
	codeParseError               = -32700
	codeInvalidRequest           = -32600
	codeMethodNotFound           = -32601
	codeInvalidParams            = -32602
	codeInternal                 = -32603
	codeTaskNotFound             = -32001
	codeTaskNotCancelable        = -32002
	codePushNotSupported         = -32003
	codeUnsupportedOperation     = -32004
	codeContentTypeNotSupported  = -32005
	codeInvalidAgentResponse     = -32006
	codeExtendedCardNotAvailable = -32007
	codeExtensionSupportRequired = -32008
	codeVersionNotSupported      = -32009

	// codeServerBusy refuses a task past a cap (ServerOptions.Sessions): A2A defines no error for it.
	codeServerBusy = httpedge.CodeServerBusy
)

// errorInfo names each code as v1.0's error.data reason and as the error's name.
var errorInfo = map[int]struct{ name, reason string }{
	codeParseError:               {"JSONParseError", "PARSE_ERROR"},
	codeInvalidRequest:           {"InvalidRequestError", "INVALID_REQUEST"},
	codeMethodNotFound:           {"MethodNotFoundError", "METHOD_NOT_FOUND"},
	codeInvalidParams:            {"InvalidParamsError", "INVALID_PARAMS"},
	codeInternal:                 {"InternalError", "INTERNAL"},
	codeTaskNotFound:             {"TaskNotFoundError", "TASK_NOT_FOUND"},
	codeTaskNotCancelable:        {"TaskNotCancelableError", "TASK_NOT_CANCELABLE"},
	codePushNotSupported:         {"PushNotificationNotSupportedError", "PUSH_NOTIFICATION_NOT_SUPPORTED"},
	codeUnsupportedOperation:     {"UnsupportedOperationError", "UNSUPPORTED_OPERATION"},
	codeContentTypeNotSupported:  {"ContentTypeNotSupportedError", "CONTENT_TYPE_NOT_SUPPORTED"},
	codeInvalidAgentResponse:     {"InvalidAgentResponseError", "INVALID_AGENT_RESPONSE"},
	codeExtendedCardNotAvailable: {"ExtendedAgentCardNotConfiguredError", "EXTENDED_AGENT_CARD_NOT_CONFIGURED"},
	codeExtensionSupportRequired: {"ExtensionSupportRequiredError", "EXTENSION_SUPPORT_REQUIRED"},
	codeVersionNotSupported:      {"VersionNotSupportedError", "VERSION_NOT_SUPPORTED"},
}

func errorName(code int) string { return errorInfo[code].name }

// newError returns an error object with v1.0's ErrorInfo in data. v0.3 responses leave data out (see
// rpcError.forVersion).
func newError(code int, format string, args ...any) *rpcError {
	e := &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
	if info, ok := errorInfo[code]; ok {
		e.Data, _ = json.Marshal([]map[string]string{{ // plain strings: cannot fail
			"@type":  "type.googleapis.com/google.rpc.ErrorInfo",
			"reason": info.reason,
			"domain": "a2a-protocol.org",
		}})
	}
	return e
}

// forVersion returns e as a server of version v sends it: v0.3's error.data is free-form, and left out.
func (e *rpcError) forVersion(v version) *rpcError {
	if v.major == 0 {
		return &rpcError{Code: e.Code, Message: e.Message, limit: e.limit}
	}
	return e
}

// version is an A2A protocol version, Major.Minor; a patch number is ignored.
type version struct{ major, minor int }

var (
	v10 = version{1, 0}
	v03 = version{0, 3}
)

func (v version) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

// parseVersion reads "1.0", "1.0.2" or "0.3". An empty value is v0.3, as the specification says of a request
// without the header.
func parseVersion(s string) (version, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return v03, nil
	}
	fields := strings.Split(s, ".")
	if len(fields) < 2 || len(fields) > 3 {
		return version{}, fmt.Errorf("version %q is not Major.Minor", s)
	}
	var n [2]int
	for i := range n {
		v, err := strconv.Atoi(fields[i])
		if err != nil || v < 0 {
			return version{}, fmt.Errorf("version %q is not Major.Minor", s)
		}
		n[i] = v
	}
	return version{n[0], n[1]}, nil
}

// decodeRequest reads one JSON-RPC request. It returns the request's id as it came (for the response, null when
// there was none to read) and an error object for a request that cannot be served.
func decodeRequest(body []byte) (*rpcRequest, *rpcError) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if !json.Valid(trimmed) {
			return nil, newError(codeParseError, "invalid JSON payload")
		}
		if trimmed[0] == '[' {
			return nil, newError(codeInvalidRequest, "batch requests are not supported")
		}
		return nil, newError(codeInvalidRequest, "the request is not a JSON object")
	}
	var req rpcRequest
	if err := json.Unmarshal(trimmed, &req); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) || !json.Valid(trimmed) {
			return nil, newError(codeParseError, "invalid JSON payload")
		}
		return &rpcRequest{ID: idOf(trimmed)}, newError(codeInvalidRequest, "invalid request: %v", err)
	}
	if !validID(req.ID) {
		return &rpcRequest{}, newError(codeInvalidRequest, "id must be a string or a number")
	}
	switch {
	case req.JSONRPC != "2.0":
		return &req, newError(codeInvalidRequest, `jsonrpc must be "2.0"`)
	case req.Method == "":
		return &req, newError(codeInvalidRequest, "method is missing")
	}
	return &req, nil
}

// idOf fishes the id out of a request that did not decode, so its error can name it.
func idOf(body []byte) json.RawMessage {
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &probe) == nil && validID(probe.ID) {
		return probe.ID
	}
	return nil
}

// validID reports whether id is absent, a string or a number.
func validID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 || string(id) == "null" {
		return true
	}
	switch id[0] {
	case '"':
		var s string
		return json.Unmarshal(id, &s) == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n json.Number
		return json.Unmarshal(id, &n) == nil
	}
	return false
}

// decodeParams decodes a request's params into v, as an invalid-params error when they do not fit.
func decodeParams(params json.RawMessage, v any) *rpcError {
	if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
		return newError(codeInvalidParams, "params are missing")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return newError(codeInvalidParams, "invalid params: %v", err)
	}
	return nil
}
