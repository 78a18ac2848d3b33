package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/pallas"
	"github.com/pallasify/pallasify/validators"
)

// draftValidate measures, per fixture kernel the rules draft, the time to
// draft it and to validate the draft (full protocol, uncached, one at a
// time). Kernels the rules refuse get a row with the refusal.
func draftValidate(ctx context.Context, e *env) ([]row, error) {
	fs, err := validators.LoadFixtures(filepath.Join("fixtures", "kernels"))
	if err != nil {
		return nil, err
	}
	var rows []row
	for _, f := range fs {
		inv, _ := kernels.Discover(ctx, f.Dir, []string{"kernel.cu"})
		var k *kernels.Kernel
		for _, kk := range inv.Kernels {
			if kk.Name == f.Spec.Name {
				k = kk
			}
		}
		if k == nil || !e.wanted(f.Name) {
			continue
		}
		spec := *f.Spec
		k.Spec = &spec
		name := "draft+validate " + f.Name
		t0 := time.Now()
		res, err := pallas.Draft(ctx, k, pallas.Options{})
		td := time.Since(t0)
		if err != nil {
			rows = append(rows, row{Name: name, Wall: td, Note: "not drafted: " + err.Error()})
			continue
		}
		work, err := os.MkdirTemp("", "pallasify-bench-ref-")
		if err != nil {
			return nil, err
		}
		req, _, err := validators.FixtureReference(ctx, f, false, work)
		if err != nil {
			os.RemoveAll(work)
			return nil, err
		}
		req.Candidate = []byte(res.Module)
		t1 := time.Now()
		v, err := validators.Validate(ctx, req, validators.Options{Timeout: validateLimit})
		tv := time.Since(t1)
		os.RemoveAll(work)
		e.traffic = append(e.traffic, trafficOf(f.Name, res.Class, res.Module, v, err))
		note := validationNote(res.Class, v, err)
		rows = append(rows, row{Name: name, Wall: td + tv, Note: fmt.Sprintf("draft %s + validate %s: %s", td.Round(time.Millisecond), tv.Round(time.Millisecond), note)})
	}
	prows, pts, err := draftPatterns(ctx, e)
	if err != nil {
		return nil, err
	}
	e.traffic = append(e.traffic, pts...)
	return append(rows, prows...), nil
}

// trafficNote is, per chip that compiled, the bytes the compiled program
// accesses against the minimum (each input read once, each output written
// once) at the largest validated shape.
func trafficNote(tpu map[string]validators.ChipCompile) string {
	v := &validators.Verdict{TPU: tpu}
	var parts []string
	for _, c := range v.TPUChips() {
		cc := tpu[c]
		if cc.Compiled && cc.MinBytes > 0 && cc.BytesAccessed > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f× (%.0f of min %.0f)", c, cc.BytesAccessed/cc.MinBytes, cc.BytesAccessed, cc.MinBytes))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; bytes accessed " + strings.Join(parts, ", ")
}

// protocolMedians measures the validator's full protocol on every fixture
// kernel's correct candidate (sandboxed, uncached, e.runs times in sequence)
// and reports the median wall time against the 10 s target.
func protocolMedians(ctx context.Context, e *env) ([]row, error) {
	res, err := validators.BenchFixtures(ctx, filepath.Join("fixtures", "kernels"), e.runs, validators.Options{Timeout: validateLimit})
	if err != nil {
		return nil, fmt.Errorf("protocol bench: %w", err)
	}
	var rows []row
	for _, r := range res {
		verdict := "PASS"
		if r.Median > 10*time.Second {
			verdict = "MISS"
		}
		var runs []string
		for _, d := range r.Runs {
			runs = append(runs, d.Round(10*time.Millisecond).String())
		}
		rows = append(rows, row{
			Name: "protocol median " + r.Kernel,
			Wall: r.Median,
			Note: fmt.Sprintf("%s, reference via %s, runs %s; target <= 10s %s", r.Verdict, r.Reference, strings.Join(runs, " "), verdict),
		})
		rows = append(rows, tpuRows(r)...)
	}
	return rows, nil
}

// tpuRows are one row per chip of the TPU compile gate (the last run's):
// the wall time of lowering and compiling every validated shape, the bytes
// the compiler says the program moves and the HBM roofline they imply.
func tpuRows(r validators.BenchResult) []row {
	v := &validators.Verdict{TPU: r.TPU}
	var rows []row
	for _, c := range v.TPUChips() {
		cc := r.TPU[c]
		name := "tpu compile " + r.Kernel + " " + c
		wall := time.Duration(cc.CompileS * float64(time.Second))
		if !cc.Compiled {
			rows = append(rows, row{Name: name, Wall: wall, Note: "FAILED: " + cc.Error})
			continue
		}
		rows = append(rows, row{Name: name, Wall: wall, Note: fmt.Sprintf("%s, %.0f bytes accessed (min %.0f), HBM roofline %.3g s",
			cc.Topology, cc.BytesAccessed, cc.MinBytes, cc.RooflineS)})
	}
	return rows
}
