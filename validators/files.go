package validators

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// FilesRequest names a validation by files, as the CLI takes it.
type FilesRequest struct {
	// SpecPath is a KernelSpec (JSON or YAML). Not needed with KernelID.
	SpecPath string
	// One reference source: a built ref.so, a reference.py, or CUDA source
	// compiled with the emulator (KernelSrc, or the kernel found by KernelID
	// in Repo). With KernelSrc/KernelID, ReferencePy is the fallback when the
	// emulator build fails (recorded in the verdict).
	ReferenceSO string
	ReferencePy string
	KernelSrc   string
	Repo        string
	KernelID    string
	// CandidatePath is the candidate module.
	CandidatePath string
	Options       Options
}

// DefaultCacheDir is where verdicts are cached unless told otherwise.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "pallasify", "verdicts")
}

// ValidateFiles resolves a FilesRequest (reading the spec, finding the
// kernel, building the reference with the emulator) and validates.
func ValidateFiles(ctx context.Context, fr FilesRequest) (*Verdict, error) {
	cand, err := os.ReadFile(fr.CandidatePath)
	if err != nil {
		return nil, fmt.Errorf("read candidate: %w", err)
	}
	req := Request{Candidate: cand, ReferenceSO: fr.ReferenceSO}
	var src string
	switch {
	case fr.KernelID != "":
		root := fr.Repo
		if root == "" {
			root = "."
		}
		k, err := kernels.Find(ctx, root, fr.KernelID, nil)
		if err != nil {
			return nil, fmt.Errorf("find kernel %s: %w", fr.KernelID, err)
		}
		if fr.SpecPath == "" {
			if k.Spec == nil {
				return nil, fmt.Errorf("kernel %s has no spec (%s): write %s or pass --kernel-spec", k.ID, k.Reason, kernels.UserSpecPath(k.ID))
			}
			req.Spec = *k.Spec
		}
		if k.Unit == nil {
			return nil, fmt.Errorf("kernel %s has no isolated CUDA unit (origin %s)", k.ID, k.Origin)
		}
		src = k.Unit.Source
	case fr.KernelSrc != "":
		b, err := os.ReadFile(fr.KernelSrc)
		if err != nil {
			return nil, fmt.Errorf("read kernel source: %w", err)
		}
		src = string(b)
	}
	if fr.SpecPath != "" {
		s, err := ReadSpec(fr.SpecPath)
		if err != nil {
			return nil, err
		}
		req.Spec = *s
	}
	if req.Spec.Schema == "" && len(req.Spec.Params) == 0 {
		return nil, errors.New("no kernel spec: pass --kernel-spec or a kernel id")
	}
	if src != "" && req.ReferenceSO == "" {
		req.KernelTU = src
		work, err := os.MkdirTemp("", "pallasify-ref-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
		so, log, berr := BuildReference(ctx, fr.Options.NoSandbox, work, src, &req.Spec)
		switch {
		case berr == nil:
			req.ReferenceSO = so
		case fr.ReferencePy != "":
			req.ReferencePy = fr.ReferencePy
			req.ReferenceNote = "emulator build failed, using reference.py: " + firstLine(berr.Error()+" "+log)
		default:
			return nil, fmt.Errorf("%w\n%s", berr, log)
		}
	} else if req.ReferenceSO == "" {
		req.ReferencePy = fr.ReferencePy
	}
	if req.ReferenceSO == "" && req.ReferencePy == "" {
		return nil, errors.New("no reference: pass --reference, --reference-py, --kernel-src or a kernel id")
	}
	return Validate(ctx, req, fr.Options)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// ReadSpec reads a KernelSpec from JSON or YAML.
func ReadSpec(path string) (*kernels.Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	var s kernels.Spec
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		err = yaml.Unmarshal(data, &s)
	} else {
		err = json.Unmarshal(data, &s)
	}
	if err != nil {
		return nil, fmt.Errorf("parse spec %s: %w", path, err)
	}
	if s.Schema != "" && s.Schema != kernels.SpecSchema {
		return nil, fmt.Errorf("spec %s: schema %q, want %q", path, s.Schema, kernels.SpecSchema)
	}
	if s.Schema == "" {
		s.Schema = kernels.SpecSchema
	}
	return &s, nil
}

// Summary renders a verdict for people.
func Summary(v *Verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", v.Kernel, strings.ToUpper(v.Verdict))
	if v.Reason != "" {
		fmt.Fprintf(&b, " — %s", v.Reason)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  cases %d (%d degenerate), shapes %s, seeds %d, distributions %s\n",
		v.Stats.Cases, v.DegenerateCases, strings.Join(v.ShapeStrings(), " "), v.Seeds, strings.Join(v.Distributions, ","))
	fmt.Fprintf(&b, "  max abs %.3g, max rel %.3g, ULP p50 %.0f p99 %.0f max %.0f, mismatches %d\n",
		v.Stats.MaxAbs, v.Stats.MaxRel, v.Stats.ULPP50, v.Stats.ULPP99, v.Stats.ULPMax, v.Stats.Mismatches)
	var gates []string
	for _, g := range []string{"launch", "banned_calls", "non_degenerate", "determinism", "inputs_unchanged", "poisoned_outputs", "tpu_compile"} {
		st := "-"
		if p, ok := v.Gates[g]; ok && p != nil {
			st = map[bool]string{true: "ok", false: "FAIL"}[*p]
		}
		gates = append(gates, g+"="+st)
	}
	fmt.Fprintf(&b, "  gates: %s\n", strings.Join(gates, " "))
	ref := "?"
	if k, ok := v.Reference["kind"].(string); ok {
		ref = k
	}
	if n, ok := v.Reference["note"].(string); ok && n != "" {
		ref += " (" + n + ")"
	}
	fmt.Fprintf(&b, "  jax %s, interpret checks %v, reference %s, sandboxed %v, %.1fs%s\n",
		v.JAXVersion, v.InterpretChecks, ref, v.Sandboxed, v.DurationS, map[bool]string{true: " (cached)"}[v.Cached])
	b.WriteString(TPUSummary(v))
	if v.TPUGate != "" {
		fmt.Fprintf(&b, "  tpu compile gate: %s\n", v.TPUGate)
	}
	return b.String()
}
