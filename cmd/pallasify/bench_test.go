package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMigrateBench: --bench-dir writes pallasify_bench.py where it says
// (with the model pallasify.yaml names), pallasify.yaml's `bench:` alone
// asks for it, and an explicit --bench=false wins over the file.
func TestMigrateBench(t *testing.T) {
	root := t.TempDir()
	for name, src := range map[string]string{
		"net.py":         "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x.cuda()\n",
		"pallasify.yaml": "bench:\n  model: \"net:Net\"\n  step: infer\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string // the script's path under the output, "" for none
	}{
		{[]string{"--bench-dir", "tools"}, "tools/pallasify_bench.py"},
		{nil, "pallasify_bench.py"},
		{[]string{"--bench=false"}, ""},
	} {
		out := filepath.Join(t.TempDir(), "out")
		io, stdout, stderr := testStreams()
		args := append(append([]string{"migrate", "--out", out}, c.args...), root)
		if code := run(args, io); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		scripts, _ := filepath.Glob(filepath.Join(out, "*", "pallasify_bench.py"))
		top, _ := filepath.Glob(filepath.Join(out, "pallasify_bench.py"))
		scripts = append(scripts, top...)
		if c.want == "" {
			if len(scripts) != 0 {
				t.Errorf("%v wrote %v", c.args, scripts)
			}
			continue
		}
		b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(c.want)))
		if err != nil || len(scripts) != 1 {
			t.Fatalf("%v: %v (scripts %v)", c.args, err, scripts)
		}
		for _, want := range []string{`default="net:Net"`, `default="infer"`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%v: %s lacks %s", c.args, c.want, want)
			}
		}
	}
}
