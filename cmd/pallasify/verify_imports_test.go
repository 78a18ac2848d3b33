package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/validators/importcheck"
)

// importPython is $PALLASIFY_PYTHON when it has torch, torch-tpu and pytest; else the test skips
// (fails under PALLASIFY_REQUIRE_STACK=1).
func importPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("PALLASIFY_PYTHON")
	if py == "" || exec.Command(py, "-c", "import importlib.metadata as m; m.version('torch-tpu'); m.version('pytest')").Run() != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
			t.Fatal("no python with torch, torch-tpu and pytest (PALLASIFY_REQUIRE_STACK=1)")
		}
		t.Skip("no python with torch, torch-tpu and pytest (set PALLASIFY_PYTHON)")
	}
	return py
}

// TestMigratedFixturesImport migrates every fixture project and e2e repository with both targets
// (the real CLI, kernels drafted by the rules, no LLM) and imports every module of each output on
// the CPU, with torch-tpu and with it hidden, collecting their tests: nothing the migration wrote
// may fail to import or to collect. One check covers every tree (a process per mode).
func TestMigratedFixturesImport(t *testing.T) {
	py := importPython(t)
	ctx := context.Background()
	var srcs []string
	for _, dir := range []string{"projects", "e2e"} {
		entries, err := os.ReadDir(filepath.Join("..", "..", "fixtures", dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				srcs = append(srcs, filepath.Join("..", "..", "fixtures", dir, e.Name()))
			}
		}
	}
	out := t.TempDir()
	var pairs []importcheck.Pair
	for _, target := range []string{"portable", "tpu"} {
		for _, src := range srcs {
			dst := filepath.Join(out, target, filepath.Base(filepath.Dir(src))+"-"+filepath.Base(src))
			io, _, errOut := testStreams()
			if code := run([]string{"migrate", "--target", target, "--no-llm", "--tpu-chips", "none", "--out", dst, src}, io); code != 0 {
				t.Fatalf("migrate --target %s %s: exit %d\n%s", target, src, code, errOut)
			}
			pairs = append(pairs, importcheck.Pair{Tree: dst, Original: src})
		}
	}
	reps, err := importcheck.CheckAll(ctx, importcheck.Options{Python: py, ModuleTimeout: 2 * time.Minute}, pairs...)
	if err != nil {
		t.Fatal(err)
	}
	modules := 0
	for _, r := range reps {
		modules += r.Total.Modules
		if r.Total.NotChecked > 0 || r.Failures() > 0 {
			rel, _ := filepath.Rel(out, r.Tree)
			t.Errorf("%s: %d failure(s) of the migration, %d not checked\n%s", rel, r.Failures(), r.Total.NotChecked, r.Text(false))
		}
	}
	if modules < 100 {
		t.Errorf("only %d module imports checked over %d trees", modules, len(reps))
	}
}

// TestVerifyImportsCmd: verify --imports on a tree whose --target tpu output builds a tpu device at
// import exits 1 and names the module, the site and PIM001; the portable output exits 0; a
// command after -- is a usage error.
func TestVerifyImportsCmd(t *testing.T) {
	py := importPython(t)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "pkg"), 0o755)
	os.WriteFile(filepath.Join(root, "pkg", "__init__.py"), nil, 0o644)
	os.WriteFile(filepath.Join(root, "pkg", "consts.py"), []byte("import torch\n\nDEV = torch.device(\"cpu\")\n"), 0o644)
	mig := t.TempDir()
	os.MkdirAll(filepath.Join(mig, "pkg"), 0o755)
	os.WriteFile(filepath.Join(mig, "pkg", "__init__.py"), nil, 0o644)
	os.WriteFile(filepath.Join(mig, "pkg", "consts.py"), []byte("import torch\n\nDEV = torch.device(\"tpu\")\n"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--against", mig, root}, 1, "pkg/consts.py: PIM001 with-torch-tpu: pkg.consts failed: RuntimeError"},
		{[]string{"--against", root, root}, 0, "without-torch-tpu: 2 ok, 0 failed"},
		{[]string{"--format", "json", "--against", mig, root}, 1, `"failures": 2`},
		{[]string{root, "--", "true"}, 2, ""},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			io, out, errOut := testStreams()
			cmd := newVerifyCmd(io, testRules)
			cmd.SetArgs(append([]string{"--imports", "--python", py}, tc.args...))
			cmd.SetOut(out)
			cmd.SetErr(errOut)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.ExecuteContext(context.Background())
			if got := exitCode(err); got != tc.code {
				t.Fatalf("exit %d (%v); want %d\nout: %s\nerr: %s", got, err, tc.code, out, errOut)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("output %q; want %q", out, tc.want)
			}
			if strings.Contains(strings.Join(tc.args, " "), "json") {
				var v map[string]any
				if err := json.Unmarshal(out.Bytes(), &v); err != nil {
					t.Errorf("--format json: %v", err)
				}
			}
		})
	}
}
