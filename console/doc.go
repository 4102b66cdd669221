// Package console is agenthost's web console: a page served by the binary itself (`agenthost ui`, or `agenthost
// serve --ui`) to talk to the agent and to see every step of its runs, and the JSON API behind it. The page's files
// are embedded (web/); they are plain modern JavaScript, web components and CSS, with no build step and nothing
// fetched from the network.
//
// # API
//
// Every path is under /api. Responses are JSON (Content-Type application/json) unless said otherwise; errors are
// {"error": "message"} with a 4xx or 5xx status. Requests that change anything (POST, DELETE) must carry the header
// X-CSRF-Token with the csrf value of GET /api/session, and a JSON body where they take one; the page's Origin, when
// sent, must be the console's own (the scheme and Host of the request) or one of Options.AllowedOrigins. On a
// protected console a script may send "Authorization: Bearer TOKEN" on every call instead of logging in; it then
// needs no CSRF token (its session's csrf is "").
//
// Who logged in decides what is seen. A caller told apart ([serve] auth_tokens_env, [serve.oauth]: a session or
// bearer token with a subject) sees only its own: the runs made for its subject (runlog.Summary.Subject, from
// host.Subject: the console's, MCP's and A2A's), the conversations it owns (host.OwnsConversation; a chat without
// conversation_id starts one it owns) and its A2A tasks; another's run, conversation or task answers 404 to every
// call, and is left out of lists and of /api/runs/live. The operator (no login needed, or [serve] auth_token_env's
// single token) sees every run and conversation, and the tasks of callers not told apart.
//
//	GET    /api/session                 {"csrf", "auth": "none"|"token"|"oauth", "agent": {"name", "description",
//	                                     "version", "model", "provider"}, "features": {"state", "tasks", "evals",
//	                                     "tool_search", "content"}, "output_schema": schema|null}
//	                                    {"login": "token"|"oauth"} (200, and nothing else) before logging in, when the
//	                                    console is protected ([serve] auth_token_env, auth_tokens_env or
//	                                    [serve.oauth]); "login" is what "auth" is once logged in: "oauth" when only a
//	                                    JWT logs in. Every other /api path answers 401 {"error", "login"} then
//	POST   /api/login    {"token"}      204 and the session cookie (HttpOnly, SameSite=Strict; Secure over TLS or
//	                                    from an https Origin); 401 on a bad token;
//	                                    after 5 failures from one address each attempt waits, 1 s doubling to 30 s
//	POST   /api/logout                  204
//
//	POST   /api/chat     {"message", "conversation_id"?, "tools"?: [name], "disable"?: [name],
//	                      "output_schema"?: schema}
//	                                    202 {"run_id"}: the run has started; follow it with its events; 429 when
//	                                    too many of the console's runs are going
//	GET    /api/runs                    {"runs": [runlog.Summary]}, newest first
//	GET    /api/runs/live               text/event-stream: "event: run", data runlog.Summary: every run kept,
//	                                    newest first, then each as it starts, changes and ends; "event: gone", data
//	                                    {"id"}: the run is no longer kept (past the most recent runs kept), a list
//	                                    drops it. A client that reconnects gets every run kept again, and replaces
//	                                    its list with them. Every event stream: 429 beyond 16 of a session (or
//	                                    bearer token) or 256 in all
//	GET    /api/runs/{id}               {"run": runlog.Summary, "entries": [runlog.Entry]}
//	GET    /api/runs/{id}/events?after=N
//	                                    text/event-stream: "event: entry", "id: SEQ", data runlog.Entry, the entries
//	                                    after N (or after Last-Event-ID), then each as it comes; "event: end", data
//	                                    runlog.Summary, once the run and every run nested in it have ended and all
//	                                    was sent. Arguments clipped to 64 KiB arrive as a JSON string
//	POST   /api/runs/{id}/cancel        204: the console's own run is cancelled, with everything under it; 409 for a
//	                                    run another front end started, or one that has ended
//	POST   /api/runs/{id}/answer {"id", "approved"?: bool, "action"?: "accept"|"decline"|"cancel", "content"?: {}}
//	                                    204: the run's waiting question (a runlog.Waiting entry) is answered. A
//	                                    question unanswered for [serve] input_timeout (10 minutes) is answered
//	                                    "nobody answered": the approval denied, the elicitation cancelled
//
//	GET    /api/tools?q=QUERY           {"tools": [{"name", "title", "source", "description", "flags": [...],
//	                                     "pinned", "input_schema", "output_schema", "score"?}], "search": {"on",
//	                                     "reason"}}: every tool, or with q those tool search ranks for it
//	GET    /api/servers                 {"servers": [{"name", "kind": "mcp"|"a2a", "transport", "url", "state":
//	                                     "connected"|"connecting"|"reconnecting"|"failed"|"needs_login"|
//	                                     "disabled", "error", "tools", "login": "agenthost mcp login NAME"}]}
//	GET    /api/conversations           {"conversations": [{"id", "title", "messages", "created", "updated"}]}
//	GET    /api/conversations/{id}      {"id", "messages": [llm.Message]}
//	DELETE /api/conversations/{id}      204
//	GET    /api/tasks                   {"tasks": [{"id", "context_id", "state", "created", "updated"}]}
//	GET    /api/tasks/{id}              the task as stored
//	GET    /api/evals                   {"datasets": [evals.Dataset]}
//	POST   /api/evals/{name}/run        202 {"id"}; 429 when 2 eval runs are going
//	GET    /api/evals/runs/{id}         {"id", "dataset", "status": "running"|"done"|"failed"|"cancelled", "error"?,
//	                                     "total", "report": evals.Report (cases so far)}; the last 20 ended are kept
//	POST   /api/evals/runs/{id}/cancel  204: the eval run is cancelled; 409 when it has ended
//
// In the session, features.state says the conversations can be listed (a state database), tasks that A2A tasks
// can, evals that eval datasets are configured, tool_search that a run searches the tools rather than offering them
// all, and content that the content of the other front ends' runs is recorded, not only their sizes and timings.
//
// Everything but /api and the page's own files answers 404. The page's files need no session: they hold no secret.
//
// It imports host, llm, runlog, internal/evals and internal/httpedge (the Host and Origin checks), and the standard
// library.
package console
