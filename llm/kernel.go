package llm

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/prompts"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators"
)

// Launch-site extraction bounds (the prompt stays small).
const (
	maxLaunchSites = 4
	maxLaunchChars = 600
)

// FromKernel builds the prompt input for a discovered kernel: its isolated
// unit, spec and the launch sites found in its file and the Python files
// that load it (read under root).
func FromKernel(root string, k *kernels.Kernel) prompts.Kernel {
	pk := prompts.Kernel{ID: k.ID, Name: k.Name, Class: k.Class, Path: k.Path, Origin: k.Origin, Spec: k.Spec}
	if k.Spec != nil && k.Spec.Class != "" {
		pk.Class = k.Spec.Class
	}
	if k.Unit != nil {
		pk.Source = k.Unit.Source
	}
	pk.Launches = LaunchSites(root, k)
	return pk
}

// LaunchSites returns up to four launch statements of k: `name<<<…>>>(…);`
// in CUDA host code, or a call of the kernel's name in Python (CuPy, or a
// binding), each with its statement's lines.
func LaunchSites(root string, k *kernels.Kernel) []string {
	var out []string
	seen := map[string]bool{}
	files := append([]string{k.Path}, k.ReferencedBy...)
	for _, rel := range files {
		if rel == "" || seen[rel] {
			continue
		}
		seen[rel] = true
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil || len(b) > 4<<20 {
			continue
		}
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if len(out) == maxLaunchSites {
				return out
			}
			idx := strings.Index(l, k.Name)
			if idx < 0 {
				continue
			}
			rest := strings.TrimLeft(l[idx+len(k.Name):], " \t")
			launch := strings.HasPrefix(rest, "<<<") ||
				(strings.HasPrefix(rest, "<") && strings.Contains(rest, "<<<")) ||
				(strings.HasSuffix(rel, ".py") && strings.HasPrefix(rest, "(") && !strings.HasPrefix(strings.TrimSpace(l), "def "))
			if !launch {
				continue
			}
			stmt := l
			open := func(s string) bool {
				if strings.HasSuffix(rel, ".py") {
					return strings.Count(s, "(") > strings.Count(s, ")")
				}
				return !strings.Contains(s, ";")
			}
			for j := i + 1; j < len(lines) && j < i+8 && open(stmt); j++ {
				stmt += "\n" + lines[j]
			}
			stmt = strings.TrimSpace(stmt)
			if len(stmt) > maxLaunchChars {
				stmt = stmt[:maxLaunchChars] + " …"
			}
			out = append(out, rel+":"+strconv.Itoa(i+1)+": "+stmt)
		}
	}
	return out
}

// ValidateFunc proves a candidate for one kernel (the caller owns the
// reference build).
type ValidateFunc = func(ctx context.Context, candidate []byte) (*validators.Verdict, error)

// Hook is what the pipeline's draft stage calls for a kernel the rules could
// not draft. With no endpoint configured (Drafter nil) every such kernel is
// reported needs-llm with Fix, and nothing is called.
type Hook struct {
	Drafter *Drafter
	// Fix is the one-line "how to configure an LLM" (Settings.Configured).
	Fix  string
	Root string
}

// NewHook resolves the hook for s: a drafter when s is configured, else a
// needs-llm reporter.
func NewHook(root string, s Settings, gate *Gate) (*Hook, error) {
	if ok, fix := s.Configured(); !ok {
		return &Hook{Fix: fix, Root: root}, nil
	}
	d, _, err := New(s, gate)
	if err != nil {
		return nil, err
	}
	return &Hook{Drafter: d, Root: root}, nil
}

// Draft drafts k. It returns the run model's draft and, when proven, the
// module source. The error is non-nil only when ctx ends.
func (h *Hook) Draft(ctx context.Context, k *kernels.Kernel, validate ValidateFunc) (*pipeline.Draft, string, error) {
	if h == nil || h.Drafter == nil {
		fix := ""
		if h != nil {
			fix = h.Fix
		}
		return NeedsLLM(fix), "", nil
	}
	if k.Spec == nil {
		return &pipeline.Draft{Drafter: "llm", Verdict: "needs-spec", Reason: "no KernelSpec: write " + kernels.UserSpecPath(k.ID)}, "", nil
	}
	o, err := h.Drafter.Draft(ctx, Job{Kernel: FromKernel(h.Root, k), Validate: validate})
	if err != nil {
		return nil, "", err
	}
	module := ""
	if o.Status == StatusProven {
		module = o.Code
	}
	return o.PipelineDraft(), module, nil
}
