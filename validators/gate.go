package validators

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pallasify/pallasify/transforms/draft"
	"github.com/pallasify/pallasify/validators/sandbox"
)

//go:embed gate.py
var gateScript []byte

// GateProblem is one reason a draft is refused before it runs.
type GateProblem struct {
	Line    int    `json:"line"`
	Message string `json:"message"`
}

// GateResult is what the static gate found ([] problems: the draft may run).
type GateResult struct {
	JAXVersion string        `json:"jax_version"`
	Problems   []GateProblem `json:"problems"`
}

// OK reports whether the draft passed.
func (g *GateResult) OK() bool { return g != nil && len(g.Problems) == 0 }

// String lists the problems, one per line.
func (g *GateResult) String() string {
	var b strings.Builder
	for _, p := range g.Problems {
		if p.Line > 0 {
			fmt.Fprintf(&b, "line %d: %s\n", p.Line, p.Message)
		} else {
			fmt.Fprintf(&b, "%s\n", p.Message)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// Gate runs the static gate (validators/gate.py) on untrusted drafts (an
// LLM's) with the validator's Python (the pinned jax) inside the sandbox:
// names and keyword arguments that exist in the pinned JAX, the harness's
// ban list, the candidate contract. The draft is parsed, never executed.
// The draft stage runs it before the validator (draft.Gate).
type Gate struct {
	// Python is the interpreter ("" finds it as validation does).
	Python string
	// NoSandbox runs unconfined (--no-sandbox). The drafts the gate passes
	// are then validated unconfined too, as the user: unless
	// UnsandboxedLLMCode also says so, the gate refuses to pass any
	// (ErrUnsandboxedLLM), so an LLM's Python never runs outside the
	// sandbox by the side effect of a flag meant for trusted code.
	NoSandbox bool
	// UnsandboxedLLMCode is the explicit opt-in (--unsandboxed-llm-code) to
	// run LLM-written Python unconfined under NoSandbox.
	UnsandboxedLLMCode bool
	// Timeout bounds one run (default 60 s).
	Timeout time.Duration
}

var _ draft.Gate = (*Gate)(nil)

// ErrUnsandboxedLLM is CheckAll's error under NoSandbox without
// UnsandboxedLLMCode: the drafts would run unconfined.
var ErrUnsandboxedLLM = errors.New("refusing to run LLM-written Python without the sandbox (--no-sandbox): " +
	"install bubblewrap, or pass --unsandboxed-llm-code to run it as your user")

// Check implements draft.Gate: it gates one candidate of a kernel of class
// cls named name and returns its problems, one per line ("" : it may run).
func (g *Gate) Check(ctx context.Context, code []byte, cls, name string) (string, error) {
	res, err := g.CheckAll(ctx, []GateItem{{Code: code, Class: cls, Name: name}})
	if err != nil {
		return "", err
	}
	return res[0].String(), nil
}

// GateItem is one draft to gate.
type GateItem struct {
	Code        []byte
	Class, Name string
}

// CheckAll gates several drafts in one interpreter (jax is imported once).
func (g *Gate) CheckAll(ctx context.Context, items []GateItem) ([]*GateResult, error) {
	if len(items) == 0 {
		return nil, nil
	}
	if g.NoSandbox && !g.UnsandboxedLLMCode {
		return nil, fmt.Errorf("static gate: %w", ErrUnsandboxedLLM)
	}
	py, err := FindPython(g.Python)
	if err != nil {
		return nil, err
	}
	sb := &sandbox.Sandbox{Disabled: g.NoSandbox}
	if err := sb.Check(ctx); err != nil {
		return nil, fmt.Errorf("static gate: refusing to handle untrusted code: %w", err)
	}
	work, err := sandbox.MkdirTemp("pallasify-gate-")
	if err != nil {
		return nil, fmt.Errorf("static gate: %w", err)
	}
	defer os.RemoveAll(work)
	if err := WriteHarness(filepath.Join(work, "harness")); err != nil {
		return nil, fmt.Errorf("static gate: %w", err)
	}
	type entry struct {
		Path  string `json:"path"`
		Class string `json:"class"`
		Name  string `json:"name"`
	}
	files := map[string][]byte{"gate.py": gateScript}
	list := make([]entry, len(items))
	for i, it := range items {
		name := fmt.Sprintf("candidate_%d.py", i)
		files[name] = it.Code
		list[i] = entry{Path: filepath.Join(work, name), Class: it.Class, Name: it.Name}
	}
	if files["items.json"], err = json.Marshal(list); err != nil {
		return nil, fmt.Errorf("static gate: %w", err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(work, name), data, 0o644); err != nil {
			return nil, fmt.Errorf("static gate: %w", err)
		}
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	timeout += time.Duration(len(items)-1) * 5 * time.Second
	sb.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
		"PYTHONPATH=" + filepath.Join(work, "harness"), "PYTHONDONTWRITEBYTECODE=1",
		"PYTHONNOUSERSITE=1", "JAX_PLATFORMS=cpu", "TF_CPP_MIN_LOG_LEVEL=2",
	}
	lim := sandbox.Limits{Wall: timeout, CPUSeconds: int(2*timeout.Seconds()) + 10, MemoryMB: 4096, FileMB: 16}
	out, err := sb.Run(ctx, work, lim, py, filepath.Join(work, "gate.py"), "--batch", filepath.Join(work, "items.json"))
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var res []*GateResult
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var r GateResult
		if json.Unmarshal([]byte(line), &r) == nil {
			res = append(res, &r)
		}
	}
	if len(res) != len(items) {
		return nil, fmt.Errorf("static gate: %d of %d results (%v): %s", len(res), len(items), err, tailString(string(out), 400))
	}
	return res, nil
}

func tailString(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
