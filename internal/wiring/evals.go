package wiring

import (
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/evals"
)

// Evals is the suite of the eval datasets [eval] datasets names, for the web console; nil when it names none. Its
// cases run through an orchestrator like the app's (the same model, tools, checks and options, observed by the same
// telemetry and the console's recorder, under the origin "eval") whose conversations are kept in memory only, so that evaluating leaves the state as it was. Each call
// returns a new suite; the suite reads its files at each listing and run.
func (a *App) Evals() *evals.Suite {
	if len(a.cfg.Eval.Datasets) == 0 {
		return nil
	}
	// As Build makes the app's orchestrator, with HostOptions' conversations, which are in memory.
	hopts := HostOptions(a.cfg, a.logger)
	hopts.Observer = a.observer
	hopts.OutputSchema = a.outputSchema
	if a.provider != config.ProviderOpenAI {
		hopts.OutputMode = host.OutputTool
	}
	// Build made the grader of [eval] model already, so this cannot fail; without it, the grader is the agent's.
	hopts.Grader, _ = a.graderModel()
	return evals.NewSuite(host.New(a.model, a.tools, hopts), a.cfg.Eval.Datasets)
}
