package runlog

import (
	"context"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/llm"
)

// Tee returns an Observer that hands each run, model call and tool call to every one of observers in turn, each
// starting under the context the one before returned (so each finds its own span there), and ends them in the
// reverse order. Events go to those that are host.EventObservers. nil observers are left out; Tee of none is nil,
// and of one is that one.
func Tee(observers ...host.Observer) host.Observer {
	var obs []host.Observer
	var events []host.EventObserver
	for _, o := range observers {
		if o == nil {
			continue
		}
		obs = append(obs, o)
		if eo, ok := o.(host.EventObserver); ok {
			events = append(events, eo)
		}
	}
	switch len(obs) {
	case 0:
		return nil
	case 1:
		return obs[0]
	}
	return &tee{obs: obs, events: events}
}

type tee struct {
	obs    []host.Observer
	events []host.EventObserver
}

var _ host.EventObserver = (*tee)(nil)

// start starts the work with each observer in turn and returns the context of the last and the end functions,
// in the reverse order.
func start[T any](ctx context.Context, obs []host.Observer, begin func(host.Observer, context.Context) (context.Context, func(T, error))) (context.Context, func(T, error)) {
	ends := make([]func(T, error), len(obs))
	for i, o := range obs {
		ctx, ends[i] = begin(o, ctx)
	}
	return ctx, func(v T, err error) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](v, err)
		}
	}
}

func (t *tee) StartRun(ctx context.Context, run *host.RunStart) (context.Context, func(*host.Answer, error)) {
	return start(ctx, t.obs, func(o host.Observer, ctx context.Context) (context.Context, func(*host.Answer, error)) {
		return o.StartRun(ctx, run)
	})
}

func (t *tee) StartModelCall(ctx context.Context, call *host.ModelCallStart) (context.Context, func(*llm.Response, error)) {
	return start(ctx, t.obs, func(o host.Observer, ctx context.Context) (context.Context, func(*llm.Response, error)) {
		return o.StartModelCall(ctx, call)
	})
}

func (t *tee) StartToolCall(ctx context.Context, call *host.ToolCallStart) (context.Context, func(*host.Result, error)) {
	return start(ctx, t.obs, func(o host.Observer, ctx context.Context) (context.Context, func(*host.Result, error)) {
		return o.StartToolCall(ctx, call)
	})
}

func (t *tee) ObserveEvent(ctx context.Context, ev *host.Event) {
	for _, eo := range t.events {
		eo.ObserveEvent(ctx, ev)
	}
}
