package llm

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/prompts"
	"github.com/pallasify/pallasify/transforms/draft"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/triton"
)

// Wrapper extraction bounds (the prompt stays small).
const (
	maxWrappers     = 3
	maxWrapperLines = 60
)

// TritonKernel is a Triton kernel as the Triton stage knows it: the
// discovery it came from, the kernel, and the kernel-mode call the
// validator's reference runs (its grid and constexprs).
type TritonKernel struct {
	Inventory *triton.Inventory
	Kernel    *triton.Kernel
	Call      triton.Call
}

// DraftTriton drafts a Triton kernel: as Draft, but the conversation opens
// with the Triton prompt (its Triton source, the code launching it, the
// spec and the reference's launch); the repair rounds are the same.
func (d *Drafter) DraftTriton(ctx context.Context, k *kernels.Kernel, tk TritonKernel, t draft.Turn) (*draft.Candidate, error) {
	return d.draft(ctx, k, t, func() ([]Message, error) {
		sys, err := prompts.TritonSystem(d.JAXVersion)
		if err != nil {
			return nil, err
		}
		user, err := prompts.TritonUser(FromTriton(k, tk))
		if err != nil {
			return nil, err
		}
		return []Message{{Role: "system", Content: sys}, {Role: "user", Content: user}}, nil
	})
}

// FromTriton builds the Triton prompt's input for k.
func FromTriton(k *kernels.Kernel, tk TritonKernel) prompts.TritonKernel {
	pk := prompts.TritonKernel{ID: k.ID, Name: k.Name, Path: k.Path, Class: k.Class, Spec: k.Spec,
		Grid: tk.Call.Grid, Constexprs: tk.Call.Constexprs}
	if k.Spec != nil && k.Spec.Class != "" {
		pk.Class = k.Spec.Class
	}
	if tk.Kernel != nil {
		pk.Line = tk.Kernel.Line
		if tk.Inventory != nil {
			pk.Source = UnitSource(tk.Inventory, tk.Kernel)
			pk.Wrappers = Wrappers(tk.Inventory, tk.Kernel)
		}
	}
	return pk
}

var reCallName = regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_]*)\s*\(`)

// UnitSource is the Triton source a translation of k needs: the file's
// triton imports and literal module constants (as the reference's isolated
// module has them), k, and the @triton.jit functions of the file it calls,
// directly or through each other.
func UnitSource(inv *triton.Inventory, k *triton.Kernel) string {
	iso := triton.Isolate(inv, k)
	var text string
	for _, v := range iso {
		text = v
	}
	const sep = "\n\n@triton.jit\n"
	parts := strings.Split(text, sep)
	head, fns := parts[0], map[string]string{}
	for _, f := range parts[1:] {
		if m := regexp.MustCompile(`^def\s+([A-Za-z_][A-Za-z0-9_]*)`).FindStringSubmatch(f); m != nil {
			fns[m[1]] = f
		}
	}
	keep := map[string]bool{k.Name: true}
	for work := []string{k.Name}; len(work) > 0; work = work[1:] {
		for _, m := range reCallName.FindAllStringSubmatch(fns[work[0]], -1) {
			if _, ok := fns[m[1]]; ok && !keep[m[1]] {
				keep[m[1]] = true
				work = append(work, m[1])
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# From %s: %s, the @triton.jit functions it calls, the file's triton imports and constants.\n", k.Path, k.Name)
	for _, l := range strings.Split(strings.TrimRight(head, "\n"), "\n") {
		if !strings.HasPrefix(l, "# Isolated by pallasify") {
			b.WriteString(l + "\n")
		}
	}
	for _, f := range parts[1:] { // in the file's order
		if m := regexp.MustCompile(`^def\s+([A-Za-z_][A-Za-z0-9_]*)`).FindStringSubmatch(f); m != nil && keep[m[1]] {
			b.WriteString(sep + strings.TrimRight(f, "\n") + "\n")
		}
	}
	return b.String()
}

// Wrappers returns the source of up to three functions launching k (the
// function around each launch, from its def to its last indented line, at
// most 60 lines), or the launch statement alone at module level.
func Wrappers(inv *triton.Inventory, k *triton.Kernel) []string {
	var out []string
	seen := map[string]bool{}
	ls := append([]*triton.Launch(nil), k.Launches...)
	sort.SliceStable(ls, func(i, j int) bool {
		return ls[i].Path < ls[j].Path || ls[i].Path == ls[j].Path && ls[i].Line < ls[j].Line
	})
	for _, l := range ls {
		if len(out) == maxWrappers {
			break
		}
		lines := strings.Split(string(inv.Files[l.Path]), "\n")
		start := l.WrapperLine
		if l.Wrapper == "" || start < 1 || start > len(lines) {
			start = l.Line
		}
		key := l.Path + ":" + l.Wrapper + ":" + strconv.Itoa(start)
		if seen[key] || start < 1 || start > len(lines) {
			continue
		}
		seen[key] = true
		out = append(out, "# "+l.Path+":"+strconv.Itoa(start)+"\n"+block(lines, start-1))
	}
	return out
}

// block is the statement starting at lines[i] with every line indented
// deeper after it (blank lines inside kept), at most maxWrapperLines.
func block(lines []string, i int) string {
	indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " \t"))
	end := i + 1
	for end < len(lines) && end-i < maxWrapperLines {
		l := lines[end]
		if strings.TrimSpace(l) != "" && len(l)-len(strings.TrimLeft(l, " \t")) <= indent && !strings.HasPrefix(strings.TrimSpace(l), ")") {
			break
		}
		end++
	}
	for end > i+1 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	return strings.Join(lines[i:end], "\n")
}
