package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/triton"
)

// Triton launches captured from the repository's own tests (with
// --capture): the test files that import a module holding a launched
// Triton kernel or its wrapper run under Triton's interpreter in the
// sandbox (triton.TestRunner; validators.TritonTests), every launch
// recorded. A launched kernel's spec then comes from its launches (spec
// source "tests"): a kernel the rules translate keeps its inferred spec with
// the captured sizes leading its sweep (all of them validated); a kernel
// they refuse gets the spec of its smallest captured launch, as it happened,
// and the kernel-mode call that replays it (TritonDraft.Spec/Call, with
// Refusal kept). The static spec stays where no test reaches the kernel.

// capturedSizesKept bounds the captured sizes added to an inferred sweep;
// tritonPerTest and tritonPerFile bound one test and one test file under
// the interpreter (the tests that use only what the tree has run first, so
// the budget goes to those that reach its kernels).
const (
	capturedSizesKept = 2
	tritonPerTest     = 45 * time.Second
	tritonPerFile     = 90 * time.Second
)

// tritonTests are the test files that import a module of mods (dotted
// paths under some import root), with the roots and the tree's top-level
// packages they import.
func tritonTests(files map[string][]byte, modFiles []string) (tests, roots, packages []string) {
	type cand struct{ root, dotted string }
	var cands []cand
	for _, f := range modFiles {
		parts := strings.Split(strings.TrimSuffix(strings.TrimSuffix(f, ".py"), "/__init__"), "/")
		for i := range parts {
			cands = append(cands, cand{strings.Join(parts[:i], "/"), strings.Join(parts[i:], ".")})
		}
	}
	dirs := map[string]bool{}
	for f := range files {
		for d := path.Dir(f); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	rootSet, pkgSet := map[string]bool{}, map[string]bool{}
	var names []string
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		if !testFileRE.MatchString(f) {
			continue
		}
		hit := false
		var imported []string
		for _, m := range importStmtRE.FindAllStringSubmatch(string(files[f]), -1) {
			mod := m[1] + m[2]
			imported = append(imported, mod)
			for _, c := range cands {
				if c.dotted == mod || strings.HasPrefix(c.dotted, mod+".") {
					hit = true
					rootSet[c.root] = true
				}
			}
		}
		if !hit {
			continue
		}
		tests = append(tests, f)
		for _, mod := range imported {
			top := strings.Split(mod, ".")[0]
			for r := range rootSet {
				if dirs[path.Join(r, top)] {
					pkgSet[top] = true
				}
			}
			if dirs[top] {
				pkgSet[top] = true
			}
		}
	}
	for r := range rootSet {
		roots = append(roots, r)
	}
	for p := range pkgSet {
		packages = append(packages, p)
	}
	sort.Strings(roots)
	sort.Strings(packages)
	return tests, roots, packages
}

// capture runs the tests that reach the stage's launched kernels and takes
// their specs from the launches; it returns what happened per kernel id.
func (s *TritonStage) capture(ctx context.Context, c *CaptureStage, inv *kernels.Inventory) map[string]*KernelCapture {
	out := map[string]*KernelCapture{}
	if c == nil || c.Triton == nil || s.Inventory == nil {
		return out
	}
	var mine []*kernels.Kernel
	var modFiles []string
	for _, k := range inv.Kernels {
		if d := s.Draft(k.ID); d != nil && k.Origin == kernels.OriginTriton {
			mine = append(mine, k)
			modFiles = appendUniqStr(modFiles, d.Kernel.Path)
			for _, l := range d.Kernel.Launches {
				modFiles = appendUniqStr(modFiles, l.Path)
			}
		}
	}
	if len(mine) == 0 {
		return out
	}
	tests, roots, packages := tritonTests(s.files, modFiles)
	if len(tests) == 0 {
		for _, k := range mine {
			out[k.ID] = &KernelCapture{BuildReason: &BuildReason{Code: CodeCaptureNoTests,
				Text: "no test file imports the module of " + k.Name + " or of its wrapper"}}
		}
		return out
	}
	res, err := c.runTriton(ctx, s.files, triton.TestRun{Tests: tests, ImportRoots: roots, Packages: packages,
		MaxLaunches: c.MaxLaunches})
	if err != nil {
		for _, k := range mine {
			out[k.ID] = &KernelCapture{BuildReason: &BuildReason{Code: CodeCaptureNotLaunched, Text: oneLine(err.Error())}}
		}
		return out
	}
	var passed, failed int
	var runs []entryRun
	for _, t := range res.Tests {
		if t.Exit == 0 && t.Failed == 0 && t.Standin == 0 {
			passed++
			runs = append(runs, entryRun{label: t.File})
			continue
		}
		failed++
		runs = append(runs, entryRun{t.File, t.File + " failed: " + t.Error})
	}
	for _, k := range mine {
		kc := &KernelCapture{TestsPassed: passed, TestsFailed: failed}
		out[k.ID] = kc
		s.useCapture(k, res, kc, runs, len(tests))
	}
	return out
}

// useCapture gives k its spec from the captured launches (or says why
// there is none).
func (s *TritonStage) useCapture(k *kernels.Kernel, res *triton.TestResult, kc *KernelCapture, runs []entryRun, entries int) {
	d := s.Draft(k.ID)
	ok, bad := triton.ForKernel(res.Launches, d.Kernel)
	kc.Captured = len(ok)
	switch {
	case len(ok) == 0 && len(bad) > 0:
		kc.BuildReason = &BuildReason{Code: triton.CodeInterpreter, Text: fmt.Sprintf(
			"Triton's interpreter did not finish %s's launch in %s: %s", k.Name, bad[0].Test, bad[0].Error)}
		return
	case len(ok) == 0:
		why := fmt.Sprintf("%d test file%s ran under the interpreter, none launched %s", entries, plural(entries, "", "s"), k.Name)
		if w := notLaunchedWhy(k, runs); w != "" {
			why += " (" + w + ")"
		}
		kc.BuildReason = &BuildReason{Code: CodeCaptureNotLaunched, Text: why}
		return
	}
	s.specFromLaunches(k, d, ok, kc, "the repository's tests")
}

// specFromLaunches gives k its spec from its finished launches ok, made by
// from (the repository's tests, driving its launchers), or says why they
// make none.
func (s *TritonStage) specFromLaunches(k *kernels.Kernel, d *TritonDraft, ok []triton.CapturedLaunch, kc *KernelCapture, from string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.Refusal == nil {
		sizes, skipped := triton.CapturedSizes(d.Spec, d.Call, ok)
		if len(sizes) == 0 {
			kc.BuildReason = &BuildReason{Code: CodeCaptureUnreadable, Text: fmt.Sprintf(
				"no captured launch of %s fits its inferred spec: %s", k.Name, skipped[0])}
			return
		}
		if len(sizes) > capturedSizesKept {
			sizes = sizes[:capturedSizesKept]
		}
		spec := *d.Spec
		spec.Domain.Sweep = append(append([]map[string]int64(nil), sizes...), d.Spec.Domain.Sweep...)
		spec.Note += fmt.Sprintf("; the sweep starts with %d size(s) captured from %s (%s)", len(sizes), from, ok[0].Test)
		d.Spec = &spec
		k.Spec, k.SpecStatus = d.Spec, kernels.SpecCaptured
		return
	}
	spec, call, err := triton.SpecFromCapture(s.Inventory, d.Kernel, ok)
	if err != nil {
		kc.BuildReason = &BuildReason{Code: CodeCaptureUnreadable, Text: oneLine(err.Error())}
		return
	}
	d.Spec, d.Call = spec, call
	k.Spec, k.SpecStatus = spec, kernels.SpecCaptured
}

// runTriton runs req over files through the Triton test runner, or takes
// its result from the cache (keyed by the runner's version, the request
// and every Python file of the tree).
func (c *CaptureStage) runTriton(ctx context.Context, files map[string][]byte, req triton.TestRun) (*triton.TestResult, error) {
	req.Files, req.Python, req.NoSandbox = files, c.python, c.noSandbox
	if req.MaxLaunches <= 0 {
		req.MaxLaunches = 4
	}
	if req.PerTest <= 0 {
		req.PerTest = tritonPerTest
	}
	if req.PerFile <= 0 {
		req.PerFile = tritonPerFile
	}
	h := sha256.New()
	fmt.Fprintf(h, "triton-capture/v1\nrunner %s\nmax %d per-test %s per-file %s\ntests %q\nroots %q\npackages %q\n",
		c.Triton.Digest(), req.MaxLaunches, req.PerTest, req.PerFile, req.Tests, req.ImportRoots, req.Packages)
	var names []string
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		sum := sha256.Sum256(files[f])
		fmt.Fprintf(h, "py %s %x\n", f, sum)
	}
	key := hex.EncodeToString(h.Sum(nil))
	var cache string
	if c.CacheDir != "" {
		cache = filepath.Join(c.CacheDir, "triton-"+key+".json")
		if b, err := os.ReadFile(cache); err == nil {
			var res triton.TestResult
			if json.Unmarshal(b, &res) == nil {
				c.count(func(s *CaptureStats) { s.RunsCached++ })
				return &res, nil
			}
		}
	}
	c.count(func(s *CaptureStats) { s.Runs++ })
	res, err := c.Triton.RunTests(ctx, req)
	if err != nil {
		return nil, err
	}
	if res.Error != "" {
		return nil, fmt.Errorf("the Triton capture run failed: %s", res.Error)
	}
	if cache != "" && os.MkdirAll(c.CacheDir, 0o755) == nil {
		if b, err := json.Marshal(res); err == nil {
			_ = os.WriteFile(cache, b, 0o644)
		}
	}
	return res, nil
}
