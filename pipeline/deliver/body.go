package deliver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/report"
)

// ReportPath is where the full report is committed, relative to the run root.
const ReportPath = ".pallasify/report.md"

// ChangeSetID identifies what a run changes: the sorted paths and contents
// of the changed files. Two runs with the same id propose the same change.
func ChangeSetID(run *pipeline.Run) string {
	var files []*pipeline.File
	for _, f := range run.Files {
		if f.Changed() {
			files = append(files, f)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	h := sha256.New()
	for _, f := range files {
		sum := sha256.Sum256(f.Updated)
		fmt.Fprintf(h, "%s\x00%x\n", f.Path, sum)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// stableRun is a copy of run without what changes from one identical run to
// the next (timings, durations, the temporary root), so the committed report
// is reproducible and an unchanged re-run pushes nothing.
func stableRun(run *pipeline.Run) *pipeline.Run {
	cp := *run
	cp.Root = "."
	cp.Timings = nil
	cp.Kernels = make([]*pipeline.Kernel, len(run.Kernels))
	for i, k := range run.Kernels {
		kc := *k
		if k.Draft != nil {
			d := *k.Draft
			d.Duration = 0
			kc.Draft = &d
		}
		cp.Kernels[i] = &kc
	}
	return &cp
}

// RenderMarkdown is the default report renderer: the report package's
// Markdown, plus kernel error statistics.
func RenderMarkdown(run *pipeline.Run) ([]byte, error) {
	var b bytes.Buffer
	if err := report.Write(&b, report.Build(run, "migrate", nil), report.Markdown); err != nil {
		return nil, fmt.Errorf("render report: %w", err)
	}
	writeKernelStats(&b, run)
	return b.Bytes(), nil
}

func writeKernelStats(b *bytes.Buffer, run *pipeline.Run) {
	n := 0
	for _, k := range run.Kernels {
		if k.Draft != nil && k.Draft.Stats != nil {
			n++
		}
	}
	if n == 0 {
		return
	}
	b.WriteString("\n### Kernel validation\n\n| Kernel | Verdict | Cases | Mismatches | Max abs err | Max rel err | ULP p50 / p99 / max |\n|---|---|---:|---:|---:|---:|---|\n")
	for _, k := range run.Kernels {
		if k.Draft == nil || k.Draft.Stats == nil {
			continue
		}
		s := k.Draft.Stats
		fmt.Fprintf(b, "| `%s` | %s | %d | %d | %.3g | %.3g | %.3g / %.3g / %.3g |\n",
			k.Name, k.Draft.Verdict, s.Cases, s.Mismatches, s.MaxAbs, s.MaxRel, s.ULPP50, s.ULPP99, s.ULPMax)
	}
}

// prBody assembles the pull request body: what the branch holds, the
// report, how to reproduce, truncated under limit bytes (GitHub counts
// characters; bytes are never fewer) with the change-set marker last.
func prBody(reportMD []byte, commits []Commit, reproduce, marker string, limit int) string {
	var b strings.Builder
	b.WriteString("This pull request was opened by **pallasify**: it moves CUDA-specific PyTorch code to TPU. ")
	b.WriteString("Every rewrite is deterministic and each kernel replacement was validated numerically against the original CUDA kernel; ")
	b.WriteString("anything pallasify could not prove is listed under *Needs a human* and left unchanged.\n\n")
	b.WriteString("### Commits\n\n| Commit | Change | Files | Rules |\n|---|---|---:|---|\n")
	for _, c := range commits {
		fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", short(c.Hash), c.Subject, len(c.Files), strings.Join(c.Codes, ", "))
	}
	b.WriteString("\n")
	b.Write(reportMD)
	b.WriteString("\n### Reproduce locally\n\n```sh\n" + reproduce + "\n```\n\n")
	b.WriteString("Re-running pallasify regenerates this branch from the base branch; it stops instead if someone else pushed to it. ")
	b.WriteString("Closing this pull request tells pallasify not to propose the same change again.\n")
	return Truncate(b.String(), limit-len(marker)-2) + "\n" + marker + "\n"
}

// Truncate cuts s to at most limit bytes at a line boundary, closes an open
// code fence and says where the full report is.
func Truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	note := fmt.Sprintf("\n\n> **Report truncated** to fit GitHub's size limit. The full report is in `%s` on this branch.\n", ReportPath)
	cut := limit - len(note) - len("\n```")
	if cut < 0 {
		cut = 0
	}
	head := s[:cut]
	if i := strings.LastIndexByte(head, '\n'); i >= 0 {
		head = head[:i+1]
	} else {
		head = ""
	}
	fences := 0
	for _, line := range strings.Split(head, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fences++
		}
	}
	if fences%2 == 1 {
		head += "```\n"
	}
	return head + note
}

func short(h string) string {
	if len(h) > 7 {
		return h[:7]
	}
	return h
}
