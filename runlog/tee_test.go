package runlog_test

import (
	"context"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
	"github.com/agenthost/agenthost/runlog"
)

// spy is an Observer (not an EventObserver) that marks the contexts it returns and logs its starts and ends.
type spy struct {
	log *[]string
	rec *runlog.Recorder
}

type spyKey struct{}

func (s spy) StartRun(ctx context.Context, _ *host.RunStart) (context.Context, func(*host.Answer, error)) {
	*s.log = append(*s.log, "spy start")
	return context.WithValue(ctx, spyKey{}, true), func(*host.Answer, error) {
		// It ends after the recorder: the run is over there.
		*s.log = append(*s.log, "spy end, recorded "+string(s.rec.Runs()[0].Status))
	}
}

func (s spy) StartModelCall(ctx context.Context, _ *host.ModelCallStart) (context.Context, func(*llm.Response, error)) {
	return ctx, func(*llm.Response, error) {}
}

func (s spy) StartToolCall(ctx context.Context, _ *host.ToolCallStart) (context.Context, func(*host.Result, error)) {
	return ctx, func(*host.Result, error) {}
}

func TestTee(t *testing.T) {
	rec := runlog.New(nil)
	if runlog.Tee() != nil || runlog.Tee(nil, nil) != nil {
		t.Error("Tee of no observer is not nil")
	}
	if o := runlog.Tee(nil, rec); o != host.Observer(rec) {
		t.Errorf("Tee of one observer = %T; want it", o)
	}
	var log []string
	obs := runlog.Tee(spy{log: &log, rec: rec}, rec)
	eo, ok := obs.(host.EventObserver)
	if !ok {
		t.Fatalf("Tee with a recorder is a %T, not an EventObserver", obs)
	}
	ctx, end := eo.StartRun(t.Context(), &host.RunStart{Agent: "a", Origin: "console"})
	if ctx.Value(spyKey{}) != true {
		t.Error("the run's context lacks the first observer's mark")
	}
	mctx, mend := eo.StartModelCall(ctx, &host.ModelCallStart{Iteration: 0})
	eo.ObserveEvent(mctx, &host.Event{Kind: host.EventTextDelta, Text: "hi"})
	mend(&llm.Response{}, nil)
	eo.ObserveEvent(ctx, &host.Event{Kind: host.EventIteration, Iteration: 1})
	end(&host.Answer{StoppedBy: host.StopAnswered}, nil)
	_, entries, _ := rec.Run(rec.Runs()[0].ID, 0)
	want := []string{"run_start r1<", "model_start m2<r1", "text m2<r1", "model_end m2<r1", "iteration r1<", "answer r1<", "run_end r1<"}
	if k := kinds(entries); !slices.Equal(k, want) {
		t.Errorf("recorded %v; want %v", k, want)
	}
	if want := []string{"spy start", "spy end, recorded answered"}; !slices.Equal(log, want) {
		t.Errorf("spy saw %q; want %q", log, want)
	}
}
