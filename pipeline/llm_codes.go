package pipeline

import "github.com/pallasify/pallasify/transforms/codes"

// Codes of the draft stage's reasons for an untrusted (LLM) draft that never
// reached the validator; a kernel's Draft.Reason starts with one.
const (
	CodeLLMUnreadable = "L-UNREADABLE"
	CodeLLMGate       = "L-GATE"
)

func init() {
	codes.Register("llm", "LLM drafter",
		codes.Code{Code: CodeLLMUnreadable, Name: "llm-unreadable", Severity: codes.Warning,
			Title: "The model's reply holds no readable Pallas module",
			Doc: "The reply is empty, or holds neither the JSON object {\"explanation\", \"code\"} nor a ```python " +
				"block. The draft stage asks the model again with that feedback while rounds remain; the last reason is reported."},
		codes.Code{Code: CodeLLMGate, Name: "llm-gate", Severity: codes.Warning,
			Title: "The model's draft failed the static gate",
			Doc: "Before a draft reaches the validator, a static gate (validators/gate.py) parses it, never runs it, and refuses " +
				"what the validator would refuse anyway: a syntax error, the harness's banned calls, no top-level " +
				"run(args, *, interpret) or no pallas_call, a jax name or keyword the installed jax lacks. The first " +
				"finding is named; the draft stage asks the model again with the gate's findings while rounds remain."},
	)
}
