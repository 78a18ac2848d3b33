package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tree is a small repository: a package exporting a model taking a config,
// factories (by annotation, by a returned local, by a registering
// decorator), a loss, a building block, a test model, an entry script
// naming one of them and a script that parses its arguments on import.
var tree = map[string]string{
	"pkg/__init__.py": "from .model import Net, NetConfig\n",
	"pkg/model.py": `from dataclasses import dataclass

from torch import nn


@dataclass
class NetConfig:
    width: int = 16


class Block(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return self.fc(x)


class Net(nn.Module):
    def __init__(self, config: NetConfig):
        super().__init__()
        self.block = Block(config.width)

    def forward(self, x):
        return self.block(x)


class Wide(Net):
    pass


class Loss(nn.Module):
    def forward(self, input, target):
        return (input - target).abs().mean()


def net_small(pretrained=False) -> Net:
    return Net(NetConfig())


def net_large(pretrained=False, **kwargs):
    model = Net(NetConfig(width=64))
    return model


@register_model
def registered(**kwargs):
    return build(**kwargs)


def needs_args(width):
    return Net(NetConfig(width))


def test_net():
    return Net(NetConfig(2))
`,
	"pkg/zoo.py": `import torch


class Tiny(torch.nn.Module):
    def forward(self, x):
        return x


class NeedsInts(torch.nn.Module):
    def __init__(self, n: int):
        super().__init__()
`,
	"train.py": `import argparse

from pkg.zoo import Tiny


def main():
    model = Tiny()
    print(argparse.ArgumentParser().parse_args().model or "net_large")


if __name__ == "__main__":
    main()
`,
	"cli.py": `import argparse

import torch

ARGS = argparse.ArgumentParser().parse_args()


class Script(torch.nn.Module):
    pass
`,
	"tests/test_model.py":   "import torch\n\n\nclass Fake(torch.nn.Module):\n    pass\n",
	"src/other/__init__.py": "",
	"src/other/m.py":        "import torch\n\n\nclass Other(torch.nn.Module):\n    pass\n",
}

func files(m map[string]string) []File {
	var out []File
	for rel, src := range m {
		out = append(out, File{Rel: rel, Src: []byte(src)})
	}
	return out
}

func TestScan(t *testing.T) {
	cands, roots := Scan(context.Background(), files(tree))
	var got []string
	for _, c := range cands {
		got = append(got, c.Ref+" ("+c.Why+")")
	}
	want := []string{
		"pkg.model:Net (exported by pkg)",
		"pkg.zoo:Tiny (named in train.py)",
		"pkg.model:net_large (named in train.py)",
		"pkg.model:net_small (a factory)",
		"pkg.model:registered (a factory)",
		"other.m:Other (a model class)",
		"pkg.model:Wide (a model class)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("candidates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(roots, " ") != ". src" {
		t.Errorf("roots = %v, want [. src]", roots)
	}
}

func TestScanNothing(t *testing.T) {
	cands, roots := Scan(context.Background(), files(map[string]string{"a.py": "x = 1\n", "b.py": "def f(x):\n    return x\n"}))
	if len(cands) != 0 || strings.Join(roots, " ") != "." {
		t.Errorf("Scan = %v, %v; want none, [.]", cands, roots)
	}
}

func TestCheck(t *testing.T) {
	ok := Config{Model: "pkg.models.vit:vit_small", Step: "infer", InputShape: []int{3, 224, 224}}
	if probs := ok.Check(); len(probs) != 0 {
		t.Errorf("Check(%+v) = %v", ok, probs)
	}
	bad := Config{Model: "pkg.model.Net", Step: "eval", InputShape: []int{0}, BatchSize: -1}
	var keys []string
	for _, p := range bad.Check() {
		keys = append(keys, p.Key)
	}
	if strings.Join(keys, " ") != "model step input_shape batch_size" {
		t.Errorf("Check(%+v) keys = %v", bad, keys)
	}
}

func TestRelTo(t *testing.T) {
	for _, c := range []struct{ dir, root, want string }{
		{".", ".", "."}, {".", "src", "src"}, {"tools", ".", ".."}, {"tools/bench", "src", "../../src"},
		{"src", "src", ""}, {"src", "src/lib", "lib"},
	} {
		if got := relTo(c.dir, c.root); got != c.want {
			t.Errorf("relTo(%q, %q) = %q, want %q", c.dir, c.root, got, c.want)
		}
	}
}

// TestRender renders a script with a configured model and one without any
// model, and checks what the holes hold; then ruff checks both with ruff's
// default rules (those of a repository without a ruff configuration) and
// with a strict selection (litgpt's: pycodestyle, pyflakes, isort,
// pyupgrade for Python 3.10), and that ruff format leaves them as they are.
func TestRender(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	scripts := map[string]Script{
		"found.py": {Dir: "tools", ImportRoots: []string{".", "src"}, LineLength: 120,
			Candidates: []Candidate{{Ref: "pkg.model:Net", Why: "exported by pkg"}, {Ref: "pkg.model:net_small", Why: "a factory"}}},
		"named.py": {Dir: ".", Config: Config{Model: "pkg.model:net_small", Step: "infer", InputShape: []int{16}, BatchSize: 4}},
		"none.py":  {Dir: "."},
	}
	for name, s := range scripts {
		src, err := s.Render(ctx)
		if err != nil {
			t.Fatal(err)
		}
		text := string(src)
		for _, want := range map[string][]string{
			"found.py": {"IMPORT_ROOTS = [\"..\", \"../src\"]", "\"pkg.model:Net\",  # exported by pkg", "python tools/pallasify_bench.py",
				"default=None", "default=\"train\"", "torch.accelerator.current_accelerator().type"},
			"named.py": {"MODELS = []", "default=\"pkg.model:net_small\"", "default=\"infer\"", "default=(16,)", "default=4"},
			"none.py":  {"MODELS = []", "No model to benchmark"},
		}[name] {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
		if strings.Contains(text, "pallasify_tpuhost") || strings.Contains(text, "import pallasify") {
			t.Errorf("%s imports something of pallasify's", name)
		}
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ruff := pinnedRuff(t)
	strict := filepath.Join(dir, "strict.toml")
	if err := os.WriteFile(strict, []byte("target-version = \"py310\"\nline-length = 120\n[lint]\nselect = [\"E\", \"F\", \"I\", \"UP\", \"W\", \"B\", \"BLE\", \"S110\", \"S112\", \"SIM\", \"RUF\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"check", "--no-cache", "--isolated", "."},
		{"check", "--no-cache", "--config", strict, "."},
		{"format", "--no-cache", "--isolated", "--check", "--line-length", "120", "found.py"},
		{"format", "--no-cache", "--isolated", "--check", "--line-length", "88", "named.py", "none.py"},
	} {
		cmd := exec.Command(ruff, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("ruff %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// pinnedRuff is the venv's ruff (next to $PALLASIFY_PYTHON, else the
// repository's .venv); the test is skipped without it.
func pinnedRuff(t *testing.T) string {
	t.Helper()
	var cands []string
	if p := os.Getenv("PALLASIFY_PYTHON"); p != "" {
		cands = append(cands, filepath.Join(filepath.Dir(p), "ruff"))
	}
	if abs, err := filepath.Abs(filepath.Join("..", "..", ".venv", "bin", "ruff")); err == nil {
		cands = append(cands, abs)
	}
	for _, c := range cands {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	t.Skip("no ruff (the venv's: $PALLASIFY_PYTHON's directory or .venv/bin)")
	return ""
}
