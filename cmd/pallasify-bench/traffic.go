package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pallasify/pallasify/pipeline/patterns"
	"github.com/pallasify/pallasify/transforms/pallas"
	"github.com/pallasify/pallasify/validators"
)

// trafficTarget is issue 11's bound: a draft's bytes accessed (v6e) at most
// 1.25 times the minimum.
const trafficTarget = 1.25

// trafficChip is the chip the bound is stated for.
const trafficChip = "v6e"

// validateLimit is the wall limit of one validation in the bench: a
// resource bound, not a speed check (float32_instance's windowed draft
// took 369 s in one bench run on the 2-core machine; the product's
// default, validators.DefaultTimeout, is 10 minutes).
const validateLimit = 900 * time.Second

// traffic is one drafted kernel's bytes accessed on trafficChip at the
// largest validated shape, beside the two minimums.
type traffic struct {
	Kernel, Class         string
	Shape                 map[string]int64
	Bytes, Min, LayoutMin float64
	// XLA names the data movement the draft leaves to XLA around its
	// kernel (trafficCauses), printed beside a draft over the bound.
	XLA []string
	// Missing says why a drafted kernel has no measurement (its validation
	// failed or rejected it, or trafficChip did not compile it); such a row
	// counts against the bound, never as within it.
	Missing string
}

// trafficCauses are the wrapper helpers of a draft that move data in XLA
// rather than in the kernel, with what they do: where a draft is over the
// bound, these are the first suspects (each XLA gather is costed at many
// times its output on TPU).
var trafficCauses = []struct{ helper, what string }{
	{"_gather_loop(", "an XLA gather per loop iteration"},
	{"_take(", "an XLA gather by loaded index"},
	{"_gather(", "an XLA gather"},
	{"_scatter_loop(", "an XLA scatter per loop iteration"},
	{"_scatter(", "an XLA scatter"},
	{"_unblock(", "a relayout copy of the output"},
	{"_run_xla(", "the XLA form where the gathered arrays exceed the VMEM budget"},
}

// xlaMoves lists the trafficCauses a draft module's kernels and run()
// call (the helpers' own bodies, which call one another, are not read, nor
// the XLA form a gather draft keeps for arrays past its VMEM budget,
// _kernel_xla and _run_xla: run() calling it is the cause named).
func xlaMoves(module string) []string {
	var code strings.Builder
	keep := false
	for _, line := range strings.Split(module, "\n") {
		if name, ok := strings.CutPrefix(line, "def "); ok {
			keep = (strings.HasPrefix(name, "_kernel") || strings.HasPrefix(name, "_run") || strings.HasPrefix(name, "run(")) &&
				!strings.Contains(name, "_xla")
		}
		if keep {
			code.WriteString(line + "\n")
		}
	}
	// a draft that tries the plane form (_plane) gathers per iteration and
	// unblocks its output only where _plane refuses it; where it takes it,
	// each array is read and written in the order of dims XLA keeps it in
	// (_plane_layout), except one whose planes' index XLA keeps minor (or
	// second-minor beyond _plane_layout's budget): XLA relayouts that one
	// between its HBM layout and the kernel's row-major planes
	plane := strings.Contains(code.String(), "_plane(")
	var out []string
	for _, c := range trafficCauses {
		if plane && (c.helper == "_gather_loop(" || c.helper == "_unblock(") {
			continue
		}
		if strings.Contains(code.String(), c.helper) {
			out = append(out, c.what)
		}
	}
	if plane {
		out = append(out, "the window's plane in VMEM where _plane takes it (else a gather per iteration): XLA's relayout of an array whose planes' index it keeps minor (_plane_layout)")
	}
	return out
}

// ratio is bytes accessed over the layout minimum (the arrays in their own
// HBM tiles, measured the way the bytes are), else over the plain minimum.
func (t traffic) ratio() float64 {
	if t.LayoutMin > 0 {
		return t.Bytes / t.LayoutMin
	}
	return t.Bytes / t.Min
}

// trafficOf is the trafficChip record of a drafted kernel's validation
// (err where it could not run), with the XLA data movement of the draft's
// module; Missing says why there is no measurement: the validation failed,
// the draft was not proven, or trafficChip did not compile it or measured
// nothing.
func trafficOf(name, class, module string, v *validators.Verdict, err error) traffic {
	t := traffic{Kernel: name, Class: class}
	if err != nil || v == nil {
		t.Missing = fmt.Sprintf("validation failed: %v", err)
		return t
	}
	c, ok := v.TPU[trafficChip]
	switch {
	case !v.Proven():
		t.Missing = v.Verdict + " " + v.Reason
	case !ok || !c.Compiled:
		t.Missing = "not compiled for " + trafficChip
	case c.BytesAccessed <= 0 || c.MinBytes <= 0:
		t.Missing = "no bytes accessed measured on " + trafficChip
	default:
		t.Shape, t.Bytes, t.Min, t.LayoutMin, t.XLA = c.Shape, c.BytesAccessed, c.MinBytes, c.LayoutMinBytes, xlaMoves(module)
	}
	return t
}

// validationNote is a draft's row note: its verdict, class, cases, the
// chips' compile times and bytes accessed, and the reason where not proven.
func validationNote(class string, v *validators.Verdict, err error) string {
	if err != nil {
		return "validation failed: " + err.Error()
	}
	note := fmt.Sprintf("%s (%s), %d cases; tpu compile %s%s", v.Verdict, class, v.Stats.Cases, validators.TPULine(v.TPU), trafficNote(v.TPU))
	if !v.Proven() {
		note += "; " + v.Reason
	}
	return note
}

// printTraffic prints one line per drafted kernel: bytes accessed, the
// minimum (each input read once, each output written once), the layout
// minimum, the ratio, and whether it exceeds trafficTarget, or why it has
// no measurement; then the kernels that exceed it or were not measured.
func printTraffic(w io.Writer, ts []traffic) {
	if len(ts) == 0 {
		return
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Kernel < ts[j].Kernel })
	fmt.Fprintf(w, "bytes accessed per fixture draft (%s, the largest validated shape; target <= %.2fx the minimum)\n", trafficChip, trafficTarget)
	fmt.Fprintln(w, "  minimum: each input read once, each output written once; layout minimum: the same arrays in their HBM")
	fmt.Fprintln(w, "  tiles, measured as bytes accessed is (each array's operand bytes in a program reading it once, tpu.layout_min_bytes);")
	fmt.Fprintln(w, "  the ratio is over the layout minimum: no program moves less")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "kernel\tclass\tshape\tbytes accessed\tminimum\tlayout minimum\tratio\t")
	var over, missing []string
	for _, t := range ts {
		if t.Missing != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\tNOT MEASURED: %s\n", t.Kernel, t.Class, t.Missing)
			missing = append(missing, t.Kernel)
			continue
		}
		mark := "ok"
		if t.ratio() > trafficTarget {
			mark = fmt.Sprintf("EXCEEDS %.2fx", trafficTarget)
			if len(t.XLA) > 0 {
				mark += " (" + strings.Join(t.XLA, ", ") + ")"
			}
			over = append(over, fmt.Sprintf("%s %.2fx", t.Kernel, t.ratio()))
		}
		lmin := "-"
		if t.LayoutMin > 0 {
			lmin = fmt.Sprintf("%.0f", t.LayoutMin)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%.0f (%.2fx)\t%s\t%.2fx\t%s\n", t.Kernel, t.Class, shapeText(t.Shape), t.Bytes, t.Min, t.Bytes/t.Min, lmin, t.ratio(), mark)
	}
	tw.Flush()
	if len(missing) > 0 {
		fmt.Fprintf(w, "%d of %d drafts not measured: %s\n", len(missing), len(ts), strings.Join(missing, ", "))
	}
	switch {
	case len(over) > 0:
		fmt.Fprintf(w, "%d of %d drafts exceed %.2fx: %s\n\n", len(over), len(ts), trafficTarget, strings.Join(over, ", "))
	case len(missing) > 0:
		fmt.Fprintf(w, "every measured draft within %.2fx of its minimum (%d of %d)\n\n", trafficTarget, len(ts)-len(missing), len(ts))
	default:
		fmt.Fprintf(w, "every draft within %.2fx of its minimum\n\n", trafficTarget)
	}
}

func shapeText(s map[string]int64) string {
	var keys []string
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, s[k]))
	}
	return strings.Join(parts, ",")
}

// patternDir holds the drafter's own pattern kernels (transforms/pallas
// TestFixtureDrafts validates the same ones).
const patternDir = "transforms/pallas/testdata"

// draftPatterns drafts and validates every pattern kernel of patternDir
// (a kernel.cu whose one kernel has a spec), its reference built from the
// CUDA source, and returns a row and a traffic record for each.
func draftPatterns(ctx context.Context, e *env) ([]row, []traffic, error) {
	ents, err := os.ReadDir(patternDir)
	if err != nil {
		return nil, nil, err
	}
	var rows []row
	var ts []traffic
	for _, ent := range ents {
		dir := filepath.Join(patternDir, ent.Name())
		if !ent.IsDir() || !e.wanted(ent.Name()) {
			continue
		}
		k, err := patterns.Load(ctx, dir)
		if errors.Is(err, patterns.ErrNoPattern) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		name := "draft+validate pattern " + ent.Name()
		t0 := time.Now()
		res, err := pallas.Draft(ctx, k, pallas.Options{})
		if err != nil {
			rows = append(rows, row{Name: name, Wall: time.Since(t0), Note: "not drafted: " + err.Error()})
			continue
		}
		work, err := os.MkdirTemp("", "pallasify-bench-pattern-")
		if err != nil {
			return nil, nil, err
		}
		so, log, err := validators.BuildReference(ctx, false, work, k.Unit.Source, k.Spec)
		if err != nil {
			os.RemoveAll(work)
			return nil, nil, fmt.Errorf("%s reference: %w\n%s", ent.Name(), err, log)
		}
		req := validators.Request{Spec: *k.Spec, ReferenceSO: so, KernelTU: k.Unit.Source, Candidate: []byte(res.Module)}
		v, err := validators.Validate(ctx, req, validators.Options{Timeout: validateLimit})
		os.RemoveAll(work)
		ts = append(ts, trafficOf("pattern "+ent.Name(), res.Class, res.Module, v, err))
		note := validationNote(res.Class, v, err)
		rows = append(rows, row{Name: name, Wall: time.Since(t0), Note: note})
	}
	return rows, ts, nil
}
