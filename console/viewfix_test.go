package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/testkit/fakellm"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
	"github.com/agenthost/agenthost/runlog"
)

// A run stopped while its question waits records the question answered "cancel": the record and the page see it
// closed.
func TestStopWhileAQuestionWaits(t *testing.T) {
	for _, tool := range []string{"danger", "ask_city"} {
		f := newFixture(t, nil)
		f.llm.Enqueue(fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: tool, Arguments: `{}`}}}, fakellm.Turn{Text: "not reached"})
		id := f.chat(t, `{"message":"ask"}`)
		question := waitQuestion(t, f, id)
		if resp, b := f.do(t, "POST", "/api/runs/"+id+"/cancel", "", "X-CSRF-Token", f.csrf(t)); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("%s: cancel: %d %s", tool, resp.StatusCode, b)
		}
		var answered *runlog.ApprovalAnswer
		f.follow(t, id, 0, func(e runlog.Entry, _ string) {
			if e.Kind == runlog.KindApprovalDone {
				answered = e.Answered
			}
		})
		if answered == nil || answered.ID != question || answered.Action != "cancel" || answered.Approved {
			t.Errorf("%s: the question %s closed with %+v; want cancel, not approved", tool, question, answered)
		}
	}
}

// Wrong logins sent in parallel are throttled as if sent one by one: only loginFreeFailures of them are checked.
func TestParallelLoginsThrottled(t *testing.T) {
	const n = 3 * loginFreeFailures
	release := make(chan struct{})
	var checked atomic.Int32
	f := newFixture(t, func(o *Options) {
		o.Token = staticToken
		// Every guess that gets as far as the check waits there until all n are in or refused.
		o.Verify = func(ctx context.Context, _ string) (string, time.Time, error) {
			checked.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "", time.Time{}, errors.New("not a valid token")
		}
	})
	var throttled atomic.Int32
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, _ := f.do(t, "POST", "/api/login", fmt.Sprintf(`{"token":"guess-%d"}`, i))
			if resp.StatusCode == http.StatusTooManyRequests {
				throttled.Add(1)
			}
			codes <- resp.StatusCode
		})
	}
	testwait.Until(t, 30*time.Second, "every guess checked or refused", func() bool {
		return int(checked.Load()+throttled.Load()) == n
	})
	close(release)
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if count[http.StatusUnauthorized] != loginFreeFailures || count[http.StatusTooManyRequests] != n-loginFreeFailures {
		t.Errorf("%d parallel wrong logins answered %v; want %d checked (401) and the others 429", n, count, loginFreeFailures)
	}
}

// The live list says "gone" for a run no longer kept, and sends it no more.
func TestLiveRunsGone(t *testing.T) {
	f := newFixtureRuns(t, &runlog.Options{MaxRuns: 1}, nil)
	f.llm.Enqueue(fakellm.Turn{Text: "one"})
	first := f.chat(t, `{"message":"first"}`)
	f.follow(t, first, 0, func(runlog.Entry, string) {})
	resp := f.openLive(t)
	f.llm.Enqueue(fakellm.Turn{Text: "two"})
	second := f.chat(t, `{"message":"second"}`)
	// The first run is dropped when the second starts; the second may end before the stream reports either, and
	// the stream reports the runs kept before those gone. Both must come, in 30 s at most.
	defer time.AfterFunc(30*time.Second, func() { resp.Body.Close() }).Stop()
	gone, ended := false, false
	for ev := range readSSE(t, resp.Body) {
		switch ev.name {
		case "gone":
			var g map[string]string
			if err := json.Unmarshal(ev.data, &g); err != nil || len(g) != 1 || g["id"] != first {
				t.Fatalf("gone %s; want {\"id\": %q}", ev.data, first)
			}
			gone = true
			if ended {
				return
			}
		case "run":
			var s runlog.Summary
			if err := json.Unmarshal(ev.data, &s); err != nil {
				t.Fatal(err)
			}
			if gone && s.ID == first {
				t.Errorf("the run gone is sent again: %s", ev.data)
			}
			if s.ID == second && s.Status != runlog.StatusRunning {
				ended = true
				if gone {
					return
				}
			}
		default:
			t.Fatalf("event %q %s", ev.name, ev.data)
		}
	}
	t.Fatalf("the stream ended with the second run ended %v and the first reported gone %v; want both", ended, gone)
}
