package llm

import (
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/prompts"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/repofs"
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
		// Through the root boundary: a file whose real path leaves the
		// repository never reaches the prompt.
		b, err := repofs.ReadFile(root, rel, 4<<20)
		if err != nil {
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
