package pipeline

import "testing"

// TestUnmarkWiredWrapped: a custom-kernel mark the rule engine wrapped at
// the line limit leaves whole, its further lines ("#   ...") with it, when
// the kernel is wired; a comment of the file's own that looks like one but
// follows no mark stays.
func TestUnmarkWiredWrapped(t *testing.T) {
	src := "import torch\n" +
		"# pallasify: PDX006 custom CUDA kernel (load_inline): cannot run on TPU; handed to the kernel stage,\n" +
		"#   which drafts a Pallas jax_op replacement and validates it against this kernel\n" +
		"_ext = load_inline(name='x')\n" +
		"#   the user's own indented note\n" +
		"y = 1\n"
	r := &Run{
		Files: []*File{{Path: "pkg/ops.py", Lang: LangPython, Updated: []byte(src)}},
		Kernels: []*Kernel{{ID: "k-1", Name: "k", Path: "pkg/ops.py",
			Draft: &Draft{Verdict: VerdictProven, Module: "pkg/_pallas_k.py"}}},
	}
	unmarkWired(r)
	want := "import torch\n_ext = load_inline(name='x')\n#   the user's own indented note\ny = 1\n"
	if got := string(r.Files[0].Updated); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
