package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
)

// TestOneHelperModulePerPackage migrates a tree whose entry script of a
// package, module of a namespace directory inside it, loose script and test
// import the package by name, and checks that none of them gets a helper
// definition pasted: each imports it by absolute name from the package's one
// helper module, which holds every definition once. A loose script that does
// not import the package, and an entry script whose `thunder` import is
// another distribution of the same name (no module of the tree under it),
// keep theirs inline. Then the migrated scripts run on this host (CPU), from
// the tree's root as a user runs them (the tpu target's are imported and
// collected: they need a TPU to run), and a second pass changes nothing.
func TestOneHelperModulePerPackage(t *testing.T) {
	py := python(t)
	ctx := context.Background()
	files := map[string]string{
		"pkg/__init__.py": "",
		"pkg/model.py":    "import torch\n\n\ndef peak():\n    return torch.cuda.max_memory_allocated()\n",
		// an entry script of the package, run as `python pkg/cli.py`
		"pkg/cli.py": "import torch\n\nfrom pkg.model import peak\n\n\ndef main():\n" +
			"    x = torch.ones(2, device=\"cuda\")\n    print(x.device.type, torch.cuda.memory_allocated(), peak())\n\n\n" +
			"if __name__ == \"__main__\":\n    main()\n",
		// a namespace directory inside the package (no __init__.py)
		"pkg/tools/report.py": "import torch\n\nfrom pkg.model import peak\n\n\ndef report():\n" +
			"    return torch.cuda.memory_reserved(), peak()\n",
		// a loose script at the root
		"bench.py": "import torch\n\nfrom pkg.tools.report import report\n\n\ndef main():\n" +
			"    x = torch.zeros(3).cuda()\n    print(x.device.type, torch.cuda.memory_allocated(), report())\n\n\n" +
			"if __name__ == \"__main__\":\n    main()\n",
		// a loose test
		"tests/test_bench.py": "import torch\n\nimport pkg.model\n\n\ndef test_memory():\n" +
			"    assert torch.cuda.memory_allocated() == pkg.model.peak() * 0\n",
		// loose, does not import the package: inline
		"tools/alone.py": "import torch\n\nif __name__ == \"__main__\":\n    print(torch.cuda.memory_allocated())\n",
		// its own package (ext/thunder) whose name is also another distribution's
		"ext/thunder/__init__.py": "",
		"ext/thunder/run.py": "import torch\n\ntry:\n    import thunder.core\nexcept ImportError:\n    thunder = None\n\n\n" +
			"if __name__ == \"__main__\":\n    print(torch.cuda.memory_allocated())\n",
	}
	for _, target := range []string{"portable", "tpu"} {
		t.Run(target, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "tree")
			for rel, text := range files {
				p := filepath.Join(root, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tg, err := rule.ParseTarget(target)
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{Root: root, Target: tg}
			run, err := Migrate(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			if err := WriteTree(ctx, run, out); err != nil {
				t.Fatal(err)
			}
			read := func(rel string) string {
				b, err := os.ReadFile(filepath.Join(out, rel))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			def := regexp.MustCompile(`(?m)^(def (pallasify_device|device_at|_accelerator_memory|_tpu_memory)\(|` +
				`class _DeviceOnFirstUse|[A-Z_]+ = torch\.device\()`)
			for _, rel := range []string{"pkg/cli.py", "pkg/tools/report.py", "bench.py", "tests/test_bench.py"} {
				text := read(rel)
				if def.MatchString(text) {
					t.Errorf("%s: a helper definition is pasted in:\n%s", rel, text)
				}
				if !strings.Contains(text, "from pkg._pallasify_device import ") {
					t.Errorf("%s: does not import the package's helper module by name:\n%s", rel, text)
				}
			}
			for _, rel := range []string{"tools/alone.py", "ext/thunder/run.py"} {
				if text := read(rel); strings.Contains(text, "_pallasify_device import") || !def.MatchString(text) {
					t.Errorf("%s: want its definitions inline (no package of the tree imported by name):\n%s", rel, text)
				}
			}
			for _, rel := range []string{"pkg/tools/_pallasify_device.py", "tests/_pallasify_device.py", "_pallasify_device.py",
				"ext/thunder/_pallasify_device.py"} {
				if _, err := os.Stat(filepath.Join(out, rel)); err == nil {
					t.Errorf("a second helper module %s", rel)
				}
			}
			helper := read("pkg/_pallasify_device.py")
			for _, name := range regexp.MustCompile(`(?m)^def (\w+)\(`).FindAllStringSubmatch(helper, -1) {
				if strings.Count(helper, "\ndef "+name[1]+"(") != 1 {
					t.Errorf("helper module defines %s more than once:\n%s", name[1], helper)
				}
			}
			runs := [][]string{{"pkg/cli.py"}, {"bench.py"}, {"-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"}}
			if target == "tpu" {
				// "tpu" needs a TPU to run: import and collect only.
				runs = [][]string{{"-c", "import bench, pkg.cli, pkg.tools.report"},
					{"-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", "tests"}}
			}
			for _, args := range runs {
				cmd := exec.Command(py, args...)
				cmd.Dir = out
				cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES=", "PYTHONDONTWRITEBYTECODE=1", "TORCH_DEVICE_BACKEND_AUTOLOAD=0",
					"PYTHONPATH="+out)
				if got, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("%v: %v\n%s", args, err, got)
				}
			}
			again, err := Migrate(ctx, Options{Root: out, Target: opts.Target})
			if err != nil {
				t.Fatal(err)
			}
			if patch := again.Patch(); len(patch) > 0 {
				t.Errorf("a second pass changes the output:\n%s", patch)
			}
		})
	}
}
