package prompts

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// TritonKernel is what the Triton user prompt shows about one kernel: its
// Triton source, the Python code that launches it, and how the validator
// runs the original and the candidate (the spec, the reference's grid and
// constexprs).
type TritonKernel struct {
	ID, Name, Path, Class string
	Line                  int
	// Source is the kernel and the @triton.jit helpers it calls, after the
	// file's triton imports and module constants.
	Source string
	// Wrappers are the Python functions that launch it (outputs allocated,
	// grid and constexpr sizes computed, the kernel[grid](...) launch).
	Wrappers []string
	Spec     *kernels.Spec
	// Grid and Constexprs are the reference's launch, as expressions of the
	// spec's size symbols.
	Grid       []string
	Constexprs map[string]string
}

// TritonExemplar is one Triton kernel our rules translated, with its proven
// rule draft: what the Triton prompt shows as an example of its class.
type TritonExemplar struct {
	Name, Class string
	Dir         string // triton_exemplars/<name>
	Kernel      string // kernel.py: the isolated Triton source
	SpecJSON    string // spec.json
	CallJSON    string // call.json: the reference's kernel-mode launch
	Candidate   string // candidate.py
}

// tritonCall is the part of call.json the prompt shows.
type tritonCall struct {
	Grid       []string          `json:"grid"`
	Constexprs map[string]string `json:"constexprs"`
}

// Launch is the exemplar's reference launch in the prompt's words.
func (e TritonExemplar) Launch() string {
	var c tritonCall
	if err := json.Unmarshal([]byte(e.CallJSON), &c); err != nil {
		return ""
	}
	return LaunchLine(c.Grid, c.Constexprs)
}

// Params is a one-line summary of the exemplar's spec parameters.
func (e TritonExemplar) Params() string { return Exemplar{SpecJSON: e.SpecJSON}.Params() }

// LaunchLine says a kernel-mode launch: grid (a, b) and each constexpr.
func LaunchLine(grid []string, constexprs map[string]string) string {
	names := make([]string, 0, len(constexprs))
	for n := range constexprs {
		names = append(names, n)
	}
	sort.Strings(names)
	cs := make([]string, 0, len(names))
	for _, n := range names {
		cs = append(cs, n+" = "+constexprs[n])
	}
	line := "grid (" + strings.Join(grid, ", ")
	if len(grid) == 1 {
		line += ","
	}
	line += ")"
	if len(cs) > 0 {
		line += ", constexprs " + strings.Join(cs, ", ")
	}
	return line
}

// TritonExemplars returns every embedded Triton exemplar, sorted by name.
func TritonExemplars() ([]TritonExemplar, error) {
	ents, err := fs.ReadDir(files, "triton_exemplars")
	if err != nil {
		return nil, fmt.Errorf("prompts: %w", err)
	}
	var out []TritonExemplar
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		ex := TritonExemplar{Name: e.Name(), Dir: path.Join("triton_exemplars", e.Name())}
		for name, dst := range map[string]*string{"kernel.py": &ex.Kernel, "spec.json": &ex.SpecJSON,
			"call.json": &ex.CallJSON, "candidate.py": &ex.Candidate} {
			b, err := files.ReadFile(path.Join(ex.Dir, name))
			if err != nil {
				return nil, fmt.Errorf("prompts: triton exemplar %s: %w", e.Name(), err)
			}
			*dst = string(b)
		}
		var s kernels.Spec
		if err := json.Unmarshal([]byte(ex.SpecJSON), &s); err != nil {
			return nil, fmt.Errorf("prompts: triton exemplar %s: spec: %w", e.Name(), err)
		}
		ex.Class = s.Class
		out = append(out, ex)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// TritonForClass returns the Triton exemplars shown for a kernel class: the
// ones of that class first, then the others (every exemplar is a different
// shape of kernel the TPU blocks handle: flat blocks, whole rows).
func TritonForClass(class string) []TritonExemplar {
	all, err := TritonExemplars()
	if err != nil {
		return nil
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Class == class && all[j].Class != class })
	return all
}

// TritonSystem renders the system prompt for Triton kernels.
func TritonSystem(jaxVersion string) (string, error) {
	return render("triton_system.tmpl", struct{ JAXVersion string }{jaxVersion})
}

// TritonUser renders the first user turn for a Triton kernel, with the
// Triton exemplars.
func TritonUser(k TritonKernel) (string, error) {
	spec, err := specJSON(k.Spec)
	if err != nil {
		return "", err
	}
	return render("triton_user.tmpl", struct {
		TritonKernel
		SpecJSON  string
		Launch    string
		Exemplars []TritonExemplar
	}{k, string(spec), LaunchLine(k.Grid, k.Constexprs), TritonForClass(k.Class)})
}
