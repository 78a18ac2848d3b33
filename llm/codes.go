package llm

import "github.com/pallasify/pallasify/transforms/codes"

// Codes of the LLM drafter's reasons (Outcome.Reason starts with one).
const (
	CodeUnreadable = "L-UNREADABLE"
	CodeGate       = "L-GATE"
)

func init() {
	codes.Register("llm", "LLM drafter",
		codes.Code{Code: CodeUnreadable, Name: "llm-unreadable", Severity: codes.Warning,
			Title: "The model's reply holds no readable Pallas module",
			Doc: "The reply is empty, or holds neither the JSON object {\"explanation\", \"code\"} nor a ```python " +
				"block. The drafter asks again with that feedback while rounds remain; the last reason is reported."},
		codes.Code{Code: CodeGate, Name: "llm-gate", Severity: codes.Warning,
			Title: "The model's draft failed the static gate",
			Doc: "Before a draft reaches the validator, a static gate (llm/gate.py) parses it, never runs it, and refuses " +
				"what the validator would refuse anyway: a syntax error, the harness's banned calls, no top-level " +
				"run(args, *, interpret) or no pallas_call, a jax name or keyword the installed jax lacks. The first " +
				"finding is named; the drafter asks again with the gate's findings while rounds remain."},
	)
}
