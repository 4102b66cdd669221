package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/llm"
)

// StepRunner runs the steps of a run: the opening and the saving of its conversation, each model call, each
// approval and each tool call. A durable runner records what each step produced; when a run is resumed after a
// crash, it hands back the recorded outcome of every step that finished instead of running it again, so that
// finished model and tool calls are not repeated and the run takes the same path as before. The loop is
// deterministic given its steps' outcomes: what varies (the model, the tools, the user's answers, new ids) is inside
// a step.
//
// The run's goroutine starts the steps, always in the same order for the same outcomes. An outcome is opaque
// bytes, or an error; a durable runner records both, except an error caused by the end of ctx.
type StepRunner interface {
	// Step runs do as the step name, on the calling goroutine, and returns its outcome.
	Step(ctx context.Context, name string, do func(ctx context.Context) ([]byte, error)) ([]byte, error)
	// Go starts do as the step name, to run concurrently with the steps started before and after it, and returns
	// the function that waits for its outcome.
	Go(ctx context.Context, name string, do func(ctx context.Context) ([]byte, error)) (wait func() ([]byte, error))
}

// DirectSteps runs every step at once and records nothing: runs that do not survive a crash.
type DirectSteps struct{}

// Step implements StepRunner.
func (DirectSteps) Step(ctx context.Context, _ string, do func(context.Context) ([]byte, error)) ([]byte, error) {
	return do(ctx)
}

// Go implements StepRunner.
func (DirectSteps) Go(ctx context.Context, _ string, do func(context.Context) ([]byte, error)) func() ([]byte, error) {
	type outcome struct {
		b   []byte
		err error
	}
	ch := make(chan outcome, 1)
	go func() {
		b, err := do(ctx)
		ch <- outcome{b, err}
	}()
	return func() ([]byte, error) {
		o := <-ch
		return o.b, o.err
	}
}

// The outcomes of the steps, as they are recorded. They are internal: a recorded run resumes only with the same
// agenthost, which the durable runner's application version ensures.

// stepJSON runs a step whose outcome is a value of type T, encoded as JSON.
func stepJSON[T any](ctx context.Context, steps StepRunner, name string, do func(context.Context) (T, error)) (T, error) {
	b, err := steps.Step(ctx, name, encodeStep(do))
	return decodeStep[T](b, err)
}

// goJSON starts a step whose outcome is a value of type T, encoded as JSON.
func goJSON[T any](ctx context.Context, steps StepRunner, name string, do func(context.Context) (T, error)) func() (T, error) {
	wait := steps.Go(ctx, name, encodeStep(do))
	return func() (T, error) { return decodeStep[T](wait()) }
}

func encodeStep[T any](do func(context.Context) (T, error)) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		v, err := do(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(v)
	}
}

func decodeStep[T any](b []byte, err error) (T, error) {
	var v T
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("a recorded step cannot be read (was it recorded by another version of agenthost?): %w", err)
	}
	return v, nil
}

// modelOutcome is the outcome of a model call step.
type modelOutcome struct {
	Response *llm.Response `json:"response"`
}

// approvalOutcome is the outcome of an approval step: the refusal, when the call may not run, and how the approval
// went for debug info.
type approvalOutcome struct {
	Refusal  *recordedResult `json:"refusal,omitempty"`
	Approval string          `json:"approval,omitempty"`
}

// toolOutcome is the outcome of a tool call step: the result, or the error that kept the tool from producing one.
// The error is recorded as its message, which is all the model and the debug info read of it.
type toolOutcome struct {
	Result *recordedResult `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// recordedResult is a Result with what the run reads of a sub-agent's result.
type recordedResult struct {
	Text       string          `json:"text,omitempty"`
	Structured json.RawMessage `json:"structured,omitempty"`
	References []Reference     `json:"references,omitempty"`
	Media      []Media         `json:"media,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	Debug      map[string]any  `json:"debug,omitempty"`
	Nested     *struct {
		Usage llm.Usage `json:"usage"`
		Plain bool      `json:"plain,omitempty"`
	} `json:"nested,omitempty"`
}

func recordResult(res *Result) *recordedResult {
	if res == nil {
		return nil
	}
	out := &recordedResult{Text: res.Text, Structured: res.Structured, References: res.References, Media: res.Media,
		IsError: res.IsError, Debug: res.Debug}
	if res.nested != nil {
		out.Nested = &struct {
			Usage llm.Usage `json:"usage"`
			Plain bool      `json:"plain,omitempty"`
		}{res.nested.usage, res.nested.plain}
	}
	return out
}

func (r *recordedResult) result() *Result {
	if r == nil {
		return nil
	}
	res := &Result{Text: r.Text, Structured: r.Structured, References: r.References, Media: r.Media, IsError: r.IsError, Debug: r.Debug}
	if r.Nested != nil {
		res.nested = &nestedResult{usage: r.Nested.Usage, plain: r.Nested.Plain}
	}
	return res
}

// errStepFailed is the error of a recorded step that failed: its message is the original error's.
type errStepFailed struct{ msg string }

func (e *errStepFailed) Error() string { return e.msg }

// toolError turns the recorded error message back into an error.
func (o *toolOutcome) err() error {
	if o.Error == "" {
		return nil
	}
	return &errStepFailed{o.Error}
}
