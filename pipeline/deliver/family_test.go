package deliver

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pallasify/pallasify/pipeline"
)

func diag(code, rule string) pipeline.Diagnostic {
	return pipeline.Diagnostic{Code: code, Rule: rule, Applied: true}
}

func TestGroupFiles(t *testing.T) {
	run := &pipeline.Run{
		Files: []*pipeline.File{
			{Path: "a.py", Updated: []byte("x"), Diagnostics: []pipeline.Diagnostic{diag("PDV001", "device-string"), diag("PHF001", "hf-device-map")}},
			{Path: "b.py", Updated: []byte("x"), Diagnostics: []pipeline.Diagnostic{diag("PHF001", "hf-device-map"), diag("PHF002", "hf-pipeline"), diag("PDV001", "")}},
			{Path: "c.py", Updated: []byte("x"), Diagnostics: []pipeline.Diagnostic{diag("PZZ001", "torch-compile-wrap")}},
			{Path: "d.py", Updated: []byte("x"), Diagnostics: []pipeline.Diagnostic{diag("PQQ001", "mystery")}},
			{Path: "e.py", Diagnostics: []pipeline.Diagnostic{diag("PDV001", "")}}, // unchanged
			{Path: "pallasify_kernels/add_one.py", Updated: []byte("k"), Generated: true},
			{Path: "pallasify_kernels/gen2.py", Updated: []byte("k"), Generated: true},
			{Path: "f.py", Updated: []byte("x"), Diagnostics: []pipeline.Diagnostic{{Code: "PDX001", Applied: false}}},
		},
		Kernels: []*pipeline.Kernel{{Name: "vector_add", Draft: &pipeline.Draft{Module: "pallasify_kernels/add_one.py"}}},
	}
	got := GroupFiles(run)
	var lines []string
	for _, g := range got {
		var paths []string
		for _, f := range g.Files {
			paths = append(paths, f.Path)
		}
		lines = append(lines, g.Key+":"+strings.Join(paths, ",")+":"+strings.Join(g.Codes, ","))
	}
	want := []string{
		"kernel:gen2:pallasify_kernels/gen2.py:", // kernel modules first
		"kernel:vector_add:pallasify_kernels/add_one.py:",
		"device:a.py:PDV001,PHF001", // tie 1–1: the earlier family
		"huggingface:b.py:PDV001,PHF001,PHF002",
		"compile:c.py:PZZ001", // by rule name
		"other:d.py,f.py:PQQ001",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("groups:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// Every commit must import: a kernel module before the registrations that
// import it, the registrations before the call sites that import them,
// whatever the families' own order says.
func TestGroupFilesImportOrder(t *testing.T) {
	run := &pipeline.Run{
		Files: []*pipeline.File{
			{Path: "pkg/ops.py", Updated: []byte("import torch\nfrom . import _pallas_ops  # pallasify\n"),
				Diagnostics: []pipeline.Diagnostic{diag("PDV001", "device-string")}},
			{Path: "pkg/_pallas_ops.py", Generated: true, Updated: []byte("try:\n    from . import _pallas_silu\n    from . import _pallas_gelu\nexcept ImportError:\n    import _pallas_silu\n")},
			{Path: "pkg/_pallas_silu.py", Generated: true, Updated: []byte("import jax\n")},
			{Path: "pkg/_pallas_gelu.py", Generated: true, Updated: []byte("from jax import lax\n")},
			{Path: "pkg/model.py", Updated: []byte("from pkg._pallas_gelu import run\n"), Diagnostics: []pipeline.Diagnostic{diag("PHF001", "hf-device-map")}},
			{Path: "other/train.py", Updated: []byte("import _pallas_ops\n"), Diagnostics: []pipeline.Diagnostic{diag("PCM001", "compile")}},
		},
		Kernels: []*pipeline.Kernel{{Name: "silu", Draft: &pipeline.Draft{Module: "pkg/_pallas_silu.py"}},
			{Name: "gelu", Draft: &pipeline.Draft{Module: "pkg/_pallas_gelu.py"}}},
	}
	var keys []string
	for _, g := range GroupFiles(run) {
		keys = append(keys, g.Key)
	}
	want := "kernel:gelu kernel:silu kernel-ops device huggingface compile"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("commit order = %s; want %s", got, want)
	}
}

func TestTruncate(t *testing.T) {
	long := "# Report\n\n```\n" + strings.Repeat("line with ünïcode ✓\n", 10000)
	cases := []struct {
		name  string
		in    string
		limit int
	}{
		{"short", "hello\n", 100},
		{"open fence", long, 65000},
		{"tiny", long, 300},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Truncate(c.in, c.limit)
			if len(got) > c.limit {
				t.Fatalf("len %d > %d", len(got), c.limit)
			}
			if !utf8.ValidString(got) {
				t.Fatal("invalid UTF-8")
			}
			if c.in == got {
				return
			}
			if !strings.Contains(got, ReportPath) || strings.Count(got, "```")%2 != 0 {
				t.Errorf("truncated body:\n%s", got[max(0, len(got)-300):])
			}
		})
	}
	body := prBody([]byte(long), []Commit{{Hash: "0123456789", Subject: "s", Files: []string{"a"}}}, "pallasify migrate .", "<!-- m -->", 65000)
	if len(body) > 65000 || !strings.HasSuffix(body, "<!-- m -->\n") {
		t.Errorf("pr body len %d, tail %q", len(body), body[len(body)-40:])
	}
}

func TestTrailers(t *testing.T) {
	msg := "pallasify: x\n\nbody: not a trailer line?\n\nPallasify-Version: 1\nPallasify-Base: abc\n"
	tr := trailers(msg)
	if tr["Pallasify-Version"] != "1" || tr["Pallasify-Base"] != "abc" || tr["body"] != "" {
		t.Errorf("%v", tr)
	}
}

func TestRenderMarkdownKernelStats(t *testing.T) {
	run := &pipeline.Run{Target: "tpu", Version: "1", Kernels: []*pipeline.Kernel{
		{Name: "vec_add", Path: "k.cu", Line: 3, Draft: &pipeline.Draft{Drafter: "rules", Verdict: "proven",
			Stats: &pipeline.ErrorStats{MaxAbs: 1.5e-7, MaxRel: 2e-6, ULPP50: 0, ULPP99: 1, ULPMax: 2, Cases: 12}}},
		{Name: "scan", Path: "s.cu", Line: 9, Draft: &pipeline.Draft{Drafter: "none", Verdict: "needs-llm"}},
	}}
	md, err := RenderMarkdown(run)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"### Kernel validation", "| `vec_add` | proven | 12 | 0 | 1.5e-07 | 2e-06 | 0 / 1 / 2 |", "needs-llm"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report lacks %q:\n%s", w, md)
		}
	}
}
