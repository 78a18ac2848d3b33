package pipeline

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// A subset of a larger repository: packages without __init__.py, a test
// importing names from them and from a dependency the venv lacks.
func TestShimsLetSubsetTestsImport(t *testing.T) {
	py := os.Getenv("PALLASIFY_PYTHON")
	if py == "" {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
			t.Fatal("PALLASIFY_PYTHON not set")
		}
		t.Skip("PALLASIFY_PYTHON not set")
	}
	root := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pkg/utils/ext_loader.py", "def load_ext(name, funcs):\n    return name\n")
	write("pkg/ops/scale.py", "from mmengine.utils import deprecated_api_warning\nfrom ..utils import ext_loader\next = ext_loader.load_ext('_ext', ['scale'])\n\n\nclass Scale:\n    @deprecated_api_warning({'k': 'factor'}, cls_name='Scale')\n    def __init__(self, factor=1):\n        self.factor = factor\n")
	write("tests/test_scale.py", "from pkg.utils import IS_CUDA_AVAILABLE, IS_NPU_AVAILABLE\nfrom pkg.ops import Scale\n")
	// a submodule named like the function it defines (mmcv.ops.three_interpolate)
	write("pkg/ops/twice.py", "def twice(x):\n    return 2 * x\n")
	files := []string{"pkg/utils/ext_loader.py", "pkg/ops/scale.py", "pkg/ops/twice.py", "tests/test_scale.py"}
	ext := &kernels.Extension{Origin: kernels.OriginPybindTree, Module: "pkg._ext", Wrappers: []string{"pkg/ops/scale.py"}}
	sf := shimFiles(root, files, ext, []string{"tests/test_scale.py"})
	for _, want := range []string{"pkg/__init__.py", "pkg/ops/__init__.py", "pkg/utils/__init__.py", "mmengine/utils/__init__.py"} {
		if _, ok := sf[want]; !ok {
			t.Errorf("no shim %s (got %v)", want, keysOf(sf))
		}
	}
	dir, err := writeShims(t.TempDir(), sf)
	if err != nil {
		t.Fatal(err)
	}
	// the sandboxed run is another user: every shim dir and file is readable by all
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if want := fs.FileMode(0o044); fi.Mode().Perm()&want != want || (d.IsDir() && fi.Mode().Perm()&0o011 != 0o011) {
			t.Errorf("%s has mode %v: the sandbox user cannot read it", p, fi.Mode().Perm())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	script := "import sys; sys.path.insert(0, ''); sys.path.append(" + pyStr(dir) + ")\n" +
		"from pkg.utils import IS_NPU_AVAILABLE\nfrom pkg.ops import Scale\nimport pkg.ops.scale as m\n" +
		"assert m.ext == '_ext' and Scale(k=3).factor == 3 and IS_NPU_AVAILABLE is False, (m.ext, IS_NPU_AVAILABLE)\n" +
		"assert m.__file__.startswith(" + pyStr(root) + "), m.__file__\n" +
		"from pkg.ops import twice\nassert callable(twice) and twice(2) == 4, twice\nprint('ok')\n"
	cmd := exec.Command(py, "-c", script)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("import through the shims: %v\n%s", err, out)
	}
	// a package that has its __init__.py gets none
	write("pkg/ops/__init__.py", "")
	if _, ok := shimFiles(root, files, ext, nil)["pkg/ops/__init__.py"]; ok {
		t.Error("shim for a package that has its __init__.py")
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
