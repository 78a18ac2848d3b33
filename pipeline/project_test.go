package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
)

// TestProjectFilesMigrate runs migrate --out over a small repository with a
// requirements file, a Dockerfile, a conda environment and configs, for both
// targets: the walk hands them to the project rules (an ignored one not),
// the output tree holds the TPU set (portable: beside the original; tpu: in
// place) and the tpu config value, every other byte of every file is kept,
// bad input is reported with its PIO code while the run goes on, and a
// second run over the output changes nothing.
func TestProjectFilesMigrate(t *testing.T) {
	tree := map[string]string{
		".gitignore":               "ignored/\n",
		"requirements.txt":         "--extra-index-url https://download.pytorch.org/whl/cu121\r\ntorch>=2.11\r\nxformers==0.0.23\r\nnumpy\r\n",
		"Dockerfile":               "FROM pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime\nRUN nvidia-smi\n",
		"environment.yml":          "name: x\nchannels:\n  - nvidia\ndependencies:\n  - pytorch-cuda=12.1\n",
		"configs/train.yaml":       "# cuda in a comment\ndevice: cuda  # keep me\nimpl: cuda\n",
		"configs/bad.yaml":         "device: cuda\n  broken: [\n",
		"configs/latin.yaml":       "device: cuda # caf\xe9\n",
		"bin/requirements.txt":     "torch\x00\n",
		"ignored/requirements.txt": "xformers\n",
		"train.py":                 "import torch\n",
	}
	root := t.TempDir()
	for p, s := range tree {
		abs := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, target := range rule.Targets {
		t.Run(string(target), func(t *testing.T) {
			run, err := Migrate(ctx, Options{Root: root, Target: target})
			if err != nil {
				t.Fatal(err)
			}
			codes := map[string][]string{}
			for _, f := range run.Files {
				for _, d := range f.Diagnostics {
					codes[f.Path] = append(codes[f.Path], d.Code)
				}
			}
			want := map[string][]string{
				"requirements.txt":     {"PNF002", "PNF003", "PNF001"},
				"Dockerfile":           {"PNF005", "PNF007"},
				"environment.yml":      {"PNF002", "PNF001"},
				"configs/train.yaml":   {"PNF010"},
				"configs/bad.yaml":     {"PIO001"},
				"configs/latin.yaml":   {"PIO002"},
				"bin/requirements.txt": {"PIO003"},
			}
			for p, w := range want {
				if !slices.Equal(codes[p], w) {
					t.Errorf("%s: codes %v; want %v", p, codes[p], w)
				}
			}
			for p := range codes {
				if _, ok := want[p]; !ok {
					t.Errorf("%s: unexpected findings %v", p, codes[p])
				}
			}
			out := filepath.Join(t.TempDir(), "out")
			if err := WriteTree(ctx, run, out); err != nil {
				t.Fatal(err)
			}
			read := func(p string) string {
				b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(p)))
				if err != nil {
					return "<missing>"
				}
				return string(b)
			}
			tpuSet := "# pallasify: PNF002 CUDA-only index (torch-tpu and the torch it needs come from PyPI)\r\n" +
				"# --extra-index-url https://download.pytorch.org/whl/cu121\r\ntorch>=2.11\r\n" +
				"# pallasify: PNF003 TorchTPU: the \"tpu\" device (brings libtpu)\r\ntorch-tpu==0.2.0\r\n" +
				"# pallasify: PNF001 CUDA-only, not installed on a TPU host: xformers' attention kernels are CUDA builds " +
				"(torch's scaled_dot_product_attention runs on TPU)\r\n# xformers==0.0.23\r\nnumpy\r\n"
			files := map[string]string{
				"requirements.txt":     tree["requirements.txt"],
				"requirements-tpu.txt": tpuSet,
				"configs/train.yaml":   tree["configs/train.yaml"],
			}
			if target == rule.TPU {
				files["requirements.txt"], files["requirements-tpu.txt"] = tpuSet, "<missing>"
				files["configs/train.yaml"] = strings.Replace(tree["configs/train.yaml"], "device: cuda", "device: tpu", 1)
			}
			for _, p := range []string{"Dockerfile", "environment.yml", "configs/bad.yaml", "configs/latin.yaml", "ignored/requirements.txt"} {
				files[p] = tree[p]
			}
			for p, w := range files {
				if got := read(p); got != w {
					t.Errorf("out/%s:\n%q\nwant\n%q", p, got, w)
				}
			}
			patch := string(run.Patch())
			if newFile := strings.Contains(patch, "diff --git a/requirements-tpu.txt b/requirements-tpu.txt\nnew file mode 100644"); newFile != (target == rule.Portable) {
				t.Errorf("patch creates requirements-tpu.txt: %v; want %v\n%s", newFile, target == rule.Portable, patch)
			}
			again, err := Migrate(ctx, Options{Root: out, Target: target})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range again.ChangedFiles() {
				t.Errorf("second pass changed %s:\n%s", f.Path, FileDiff(f))
			}
		})
	}
}
