package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTeeWritesLatest: each part's tables go to stdout and to its file under
// -latest-dir, under a line naming the run; the audit's plain-text table is
// fenced; a second run replaces the file; no -latest-dir, no file.
func TestTeeWritesLatest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".bench")
	var out bytes.Buffer
	o := Options{Out: &out, Err: io.Discard, Latest: dir}
	agg := &Aggregate{Date: "2026-12-07 20:16 UTC", Corpus: "../shared/corpus", Binary: "bin/pallasify", Target: "tpu", Parallel: 2,
		Folders: []Folder{{Name: "mmcv-ops", AnalyzeS: 1, MigrateS: 2}}}
	summarizeTotal(agg)
	if err := tee(o, agg, latestKernels, func(w io.Writer) { writeAggregate(w, agg) }); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "corpus-latest.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"# pallasify-corpus: latest kernel stages\n",
		"on 2026-12-07 20:16 UTC", "binary bin/pallasify, corpus ../shared/corpus",
		"## pallasify corpus — 2026-12-07 20:16 UTC", "### mmcv-ops", "| kernels | found |", "### total"} {
		if !strings.Contains(got, want) {
			t.Errorf("corpus-latest.md lacks %q:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(got, out.String()) {
		t.Errorf("corpus-latest.md does not end with what was printed:\n%s\nprinted:\n%s", got, out.String())
	}
	audit := &AuditReport{WallS: 3, Rows: []AuditRow{{Repo: "timm", Target: "tpu", Files: 9, FilesChanged: 2}}}
	if err := tee(o, agg, latestAudit, func(w io.Writer) { writeAudit(w, audit) }); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "corpus-audit-latest.md"))
	if s := string(b); !strings.Contains(s, "```text\nMaintainer audit (3 s)") || !strings.Contains(s, "timm") || !strings.HasSuffix(s, "\n```\n") {
		t.Errorf("corpus-audit-latest.md:\n%s", s)
	}
	agg.Date = "2026-12-08 09:00 UTC"
	if err := tee(o, agg, latestKernels, func(w io.Writer) { writeAggregate(w, agg) }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "corpus-latest.md")); strings.Contains(string(b), "2026-12-07") {
		t.Errorf("the second run did not replace corpus-latest.md:\n%s", b)
	}
	none := t.TempDir()
	o.Latest = ""
	if err := tee(o, agg, latestHost, func(w io.Writer) { io.WriteString(w, "x") }); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(none); len(ents) != 0 {
		t.Errorf("no -latest-dir, but files were written: %v", ents)
	}
}
