package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

var hostColumns = []string{"target", "after run on", "passed before (CPU)", "passed after", "output differences",
	"unsupported ops", "CUDA-only calls", "custom CUDA ops", "device mix-ups", "verify"}

// TopFindings is how many findings of each kind a repository's list shows.
const TopFindings = 5

// testsCell renders "passed (F failed, E errors)"; "-" when the output was
// not understood.
func testsCell(c TestCounts) string {
	if !c.Known {
		return "-"
	}
	s := itoa(c.Passed)
	var bad []string
	if c.Failed > 0 {
		bad = append(bad, itoa(c.Failed)+" failed")
	}
	if c.Errors > 0 {
		bad = append(bad, itoa(c.Errors)+" errors")
	}
	if len(bad) > 0 {
		s += " (" + strings.Join(bad, ", ") + ")"
	}
	return s
}

// findingCell renders a kind of finding: distinct entries and total calls;
// "-" without a TPU report (verify without --tpu).
func findingCell(present bool, distinct, calls int) string {
	switch {
	case !present:
		return "-"
	case distinct == 0:
		return "0"
	case calls > distinct:
		return fmt.Sprintf("%d (%d calls)", distinct, calls)
	default:
		return itoa(distinct)
	}
}

func opCalls(fs []OpFinding) int {
	n := 0
	for _, f := range fs {
		n += max(1, f.Count)
	}
	return n
}

func cudaCalls(fs []CUDAFinding) int {
	n := 0
	for _, f := range fs {
		n += max(1, f.Count)
	}
	return n
}

func mixCalls(ms []json.RawMessage) int {
	n := 0
	for _, m := range ms {
		var f struct{ Count int }
		json.Unmarshal(m, &f)
		n += max(1, f.Count)
	}
	return n
}

func hostRow(r HostRun) []string {
	on := map[string]string{"tpu-host": "TPU host", "cpu": "CPU (no --tpu)"}[r.AfterOn]
	if on == "" || r.Error != "" && !r.After.Known {
		on = "-"
	}
	diffs := "-"
	if r.Same != nil {
		diffs = itoa(len(r.Differences))
	}
	t := r.TPU
	present := t != nil
	if t == nil {
		t = &TPUFindings{}
	}
	verify := fmt.Sprintf("exit %d, %.0f s", r.VerifyExit, r.Seconds)
	if r.Error != "" {
		verify = "error, " + fmt.Sprintf("%.0f s", r.Seconds)
	}
	return []string{r.Target, on, testsCell(r.Before), testsCell(r.After), diffs,
		findingCell(present, len(t.Unsupported), opCalls(t.Unsupported)),
		findingCell(present, len(t.CUDAOnly), cudaCalls(t.CUDAOnly)),
		findingCell(present, len(t.CustomCUDA), opCalls(t.CustomCUDA)),
		findingCell(present, len(t.Mixups), mixCalls(t.Mixups)), verify}
}

// writeHost prints the TPU-host part: the venv, then per repository a table
// (a row per target) and its findings.
func writeHost(w io.Writer, rep *HostReport) {
	fmt.Fprintf(w, "\n## TPU host (corpus repositories)\n\n")
	v := rep.Venv
	how := "reused"
	if !v.Reused {
		how = fmt.Sprintf("installed from PyPI in %.1f s", v.InstallS)
	}
	fmt.Fprintf(w, "benchmark venv %s (%s, %.0f MB; torch, torch_tpu, jax from %s); ", v.Path, how, v.SizeMB, v.Base)
	if rep.Verify == "tpu" {
		fmt.Fprintf(w, "before: the original tree on the CPU; after: the migrated tree on the simulated TPU host (verify --tpu); %.1f s wall\n", rep.WallS)
	} else {
		fmt.Fprintf(w, "verify has no --tpu yet: before and after both on the CPU; %.1f s wall\n", rep.WallS)
	}
	if v.Error != "" {
		fmt.Fprintf(w, "\nvenv error: %s\n", v.Error)
		return
	}
	var repos []string
	byRepo := map[string][]HostRun{}
	for _, r := range rep.Runs {
		if _, ok := byRepo[r.Repo]; !ok {
			repos = append(repos, r.Repo)
		}
		byRepo[r.Repo] = append(byRepo[r.Repo], r)
	}
	for _, repo := range repos {
		fmt.Fprintf(w, "\n### %s\n\n", repo)
		fmt.Fprintf(w, "| %s |\n", strings.Join(hostColumns, " | "))
		seps := make([]string, len(hostColumns))
		for i := range seps {
			seps[i] = "---:"
		}
		seps[0], seps[1] = "---", "---"
		fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
		for _, r := range byRepo[repo] {
			if r.Target == "" {
				continue
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(hostRow(r), " | "))
		}
		fmt.Fprintln(w)
		for _, r := range byRepo[repo] {
			writeHostNotes(w, r)
		}
	}
}

func writeHostNotes(w io.Writer, r HostRun) {
	p := "- "
	if r.Target != "" {
		p += r.Target + ": "
	}
	if r.Error != "" {
		fmt.Fprintf(w, "%serror: %s\n", p, oneLine(r.Error))
	}
	list := func(what string, items []string) {
		if len(items) == 0 {
			return
		}
		shown := items[:min(len(items), TopFindings)]
		more := ""
		if len(items) > len(shown) {
			more = fmt.Sprintf("; +%d more", len(items)-len(shown))
		}
		fmt.Fprintf(w, "%s%s (%d): %s%s\n", p, what, len(items), strings.Join(shown, "; "), more)
	}
	list("failing after migration only", mapStrings(r.NewlyFailing, func(s string) string { return "`" + clip(s, 160) + "`" }))
	if t := r.TPU; t != nil {
		var ops, cuda, custom, mix []string
		for _, f := range t.Unsupported {
			cls := ""
			if f.Class != "" {
				cls = ", " + f.Class
			}
			ops = append(ops, fmt.Sprintf("`%s` ×%d%s at %s", f.Op, f.Count, cls, site(f.Site)))
		}
		for _, f := range t.CUDAOnly {
			cuda = append(cuda, fmt.Sprintf("`%s` ×%d at %s: %s", f.API, f.Count, site(f.Site), clip(f.Error, 120)))
		}
		for _, f := range t.CustomCUDA {
			custom = append(custom, fmt.Sprintf("`%s` ×%d at %s", f.Op, f.Count, site(f.Site)))
		}
		for _, m := range t.Mixups {
			var f struct {
				Op, Devices, Site, Error string
				Count                    int
			}
			if json.Unmarshal(m, &f) == nil && f.Op != "" {
				mix = append(mix, fmt.Sprintf("`%s` on %s ×%d at %s: %s", f.Op, f.Devices, f.Count, site(f.Site), clip(f.Error, 100)))
			} else {
				mix = append(mix, clip(string(m), 160))
			}
		}
		list("unsupported ops", ops)
		list("CUDA-only calls", cuda)
		list("custom CUDA ops", custom)
		list("device mix-ups", mix)
	}
	list("output differences", mapStrings(r.Differences, func(s string) string { return clip(s, 160) }))
}

// site renders a call site; autograd's backward ops have none.
func site(s string) string {
	if s == "" {
		return "(no Python call site)"
	}
	return s
}

func mapStrings(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
