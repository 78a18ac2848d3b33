package batch_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/batch"
	"github.com/pallasify/pallasify/pipeline/deliver/gittest"
	"github.com/pallasify/pallasify/pipeline/report"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators"
)

// fixtureFiles reads fixtures/e2e/NAME as a file map.
func fixtureFiles(t *testing.T, name string) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..", "fixtures", "e2e", name)
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.Contains(rel, "__pycache__") {
			return nil
		}
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func stackPython(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PALLASIFY_PYTHON"); p != "" {
		return p
	}
	if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
		t.Fatal("PALLASIFY_PYTHON unset under PALLASIFY_REQUIRE_STACK=1")
	}
	t.Skip("no PALLASIFY_PYTHON: the kernel stages need the real stack (make venv)")
	return ""
}

// TestBatchRunsKernelStages: a batch over a repository with a load_inline
// CUDA kernel drafts, validates (sandboxed, real harness) and wires it, as
// migrate does, and pushes one commit per kernel before the call sites.
func TestBatchRunsKernelStages(t *testing.T) {
	py := stackPython(t)
	root := t.TempDir()
	bare := gittest.NewRemote(t, root, "acme/act", fixtureFiles(t, "inline_act"))
	stages := batch.Stages{Validation: validators.Options{Python: py, Timeout: 240 * time.Second, CacheDir: t.TempDir()},
		Getenv: func(string) string { return "" }}
	runDir := t.TempDir()
	sum, err := batch.Run(context.Background(), []batch.Entry{{ID: "act", Source: "file://" + bare, Target: "tpu"}},
		batch.Options{RunDir: runDir, Migrate: stages.Migrator("test"), Push: true, Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	st := sum.Repos[0]
	if st.State != batch.StateDone || st.Kernels != 1 {
		t.Fatalf("status %+v", st)
	}
	data, err := os.ReadFile(filepath.Join(runDir, "repos", "act", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Kernels) != 1 || rep.Kernels[0].Drafter != "rules" || rep.Kernels[0].Verdict != pipeline.VerdictProven || rep.Kernels[0].Module == "" {
		t.Fatalf("kernel row %+v", rep.Kernels)
	}
	subjects := gittest.Git(t, bare, "log", "--reverse", "--format=%s", "main..pallasify/tpu-migration")
	want := []string{"pallasify: add proven Pallas kernel scaled_silu_kernel",
		"pallasify: register the proven Pallas kernels with TorchTPU",
		"pallasify: rewrite CUDA device code for TPU"}
	if !strings.HasPrefix(subjects, strings.Join(want, "\n")) {
		t.Fatalf("commits:\n%s\nwant first:\n%s", subjects, strings.Join(want, "\n"))
	}
	ops := gittest.Git(t, bare, "show", "pallasify/tpu-migration:inline_act/ops.py")
	if !strings.Contains(ops, "_pallas_ops.scaled_silu(") {
		t.Errorf("call site not wired:\n%s", ops)
	}
}

// slowValidator takes longer than any budget.
type slowValidator struct{ calls int }

func (s *slowValidator) Validate(ctx context.Context, k *kernels.Kernel, module []byte) (*pipeline.DraftVerdict, error) {
	s.calls++
	<-ctx.Done()
	return nil, ctx.Err()
}

// The kernel stages get the repository's time limit less a reserve: a
// validation that outlives it is stopped, the kernel is reported (PDR005)
// and the rewrites are still delivered, well before the repository's limit.
func TestBatchKernelBudget(t *testing.T) {
	root := t.TempDir()
	files := fixtureFiles(t, "inline_act")
	bare := gittest.NewRemote(t, root, "acme/act", files)
	v := &slowValidator{}
	stages := batch.Stages{Validator: v, Reserve: 6 * time.Second, Getenv: func(string) string { return "" }}
	runDir := t.TempDir()
	start := time.Now()
	sum, err := batch.Run(context.Background(), []batch.Entry{{ID: "act", Source: "file://" + bare, Target: "tpu"}},
		batch.Options{RunDir: runDir, Migrate: stages.Migrator("test"), Push: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	st := sum.Repos[0]
	if st.State != batch.StateDone || st.Delivery == nil || st.Delivery.Status != "pushed" {
		t.Fatalf("status %+v", st)
	}
	if v.calls != 1 || took > 9*time.Second {
		t.Errorf("validator calls %d, run took %s (limit 10s, reserve 6s)", v.calls, took)
	}
	data, _ := os.ReadFile(filepath.Join(runDir, "repos", "act", "report.json"))
	if !strings.Contains(string(data), "PDR005") || !strings.Contains(string(data), "time budget") {
		t.Errorf("report lacks the budget diagnostic:\n%.3000s", data)
	}
	if strings.Contains(gittest.Git(t, bare, "log", "--format=%s", "main..pallasify/tpu-migration"), "Pallas kernel") {
		t.Error("an unvalidated kernel was committed")
	}
}
