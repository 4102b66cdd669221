package console

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/evals"
	"github.com/agenthost/agenthost/internal/testkit/testwait"
)

// fakeSuite has two datasets: "slow", whose runs end only when cancelled, and "quick", whose runs end at once.
type fakeSuite struct{}

func (fakeSuite) Datasets() []evals.Dataset {
	return []evals.Dataset{{Name: "slow", Cases: 1}, {Name: "quick", Cases: 1}}
}

func (fakeSuite) Run(ctx context.Context, dataset string, _ int, _ func(*evals.Result)) (*evals.Report, error) {
	if dataset == "slow" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &evals.Report{Cases: []*evals.Result{}}, nil
}

func TestEvalRunsBoundedAndCancellable(t *testing.T) {
	f := newFixture(t, nil)
	f.console.evals = fakeSuite{}
	csrf := f.csrf(t)
	start := func(dataset string, want int) string {
		t.Helper()
		resp, b := f.do(t, "POST", "/api/evals/"+dataset+"/run", "", "X-CSRF-Token", csrf)
		if resp.StatusCode != want {
			t.Fatalf("run %s: %d %s, want %d", dataset, resp.StatusCode, b, want)
		}
		var r struct{ ID string }
		_ = json.Unmarshal(b, &r)
		return r.ID
	}
	status := func(id string) (int, string) {
		resp, b := f.do(t, "GET", "/api/evals/runs/"+id, "")
		var r struct{ Status string }
		_ = json.Unmarshal(b, &r)
		return resp.StatusCode, r.Status
	}
	first, second := start("slow", http.StatusAccepted), start("slow", http.StatusAccepted)
	start("quick", http.StatusTooManyRequests) // two are going
	if resp, b := f.do(t, "POST", "/api/evals/runs/"+first+"/cancel", "", "X-CSRF-Token", csrf); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("cancel: %d %s", resp.StatusCode, b)
	}
	testwait.Until(t, 30*time.Second, "the cancelled eval run to end", func() bool {
		_, s := status(first)
		return s == "cancelled"
	})
	if resp, _ := f.do(t, "POST", "/api/evals/runs/"+first+"/cancel", "", "X-CSRF-Token", csrf); resp.StatusCode != http.StatusConflict {
		t.Errorf("cancel an ended eval run: %d", resp.StatusCode)
	}
	if resp, _ := f.do(t, "POST", "/api/evals/runs/nope/cancel", "", "X-CSRF-Token", csrf); resp.StatusCode != http.StatusNotFound {
		t.Errorf("cancel an unknown eval run: %d", resp.StatusCode)
	}
	// The ended runs are kept up to maxEvalRuns, the oldest dropped first; the one going stays.
	var quick []string
	for range maxEvalRuns + 1 {
		id := start("quick", http.StatusAccepted)
		testwait.Until(t, 30*time.Second, "a quick eval run to end", func() bool {
			_, s := status(id)
			return s == "done"
		})
		quick = append(quick, id)
	}
	if code, _ := status(first); code != http.StatusNotFound {
		t.Errorf("the oldest ended eval run: %d, want dropped", code)
	}
	if code, _ := status(quick[0]); code != http.StatusNotFound {
		t.Errorf("the oldest ended quick eval run: %d, want dropped", code)
	}
	if code, s := status(second); code != http.StatusOK || s != "running" {
		t.Errorf("the eval run going: %d %q, want kept", code, s)
	}
	if code, s := status(quick[1]); code != http.StatusOK || s != "done" {
		t.Errorf("the %dth newest ended eval run: %d %q, want kept", maxEvalRuns, code, s)
	}
}
