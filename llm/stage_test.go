package llm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/llm/llmtest"
	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators"
)

// TestStageDrafter drafts a discovered kernel through the pipeline's drafter
// interface: reference built from the isolated unit, loop with feedback,
// proven module returned as the candidate.
func TestStageDrafter(t *testing.T) {
	py := needPython(t)
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(root, "fixtures", "kernels", "gelu", "kernel.cu"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "csrc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "csrc", "gelu.cu"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	inv, probs := kernels.Discover(context.Background(), dir, nil)
	if len(inv.Kernels) != 1 || inv.Kernels[0].Spec == nil {
		t.Fatalf("discovery: %d kernels, problems %v", len(inv.Kernels), probs)
	}
	k := inv.Kernels[0]
	srv := llmtest.New(t, root, llmtest.Load(t, root, "wrong_then_right"))
	s, err := Resolve(configLLM(), Flags{BaseURL: srv.URL(), Model: "test-model"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s.Timeout = 20 * time.Second
	d, _, err := New(s, &Gate{Python: py})
	if err != nil {
		t.Fatal(err)
	}
	sd := &StageDrafter{Drafter: d, Root: dir, Validation: validators.Options{Python: py, Quick: true, Seeds: 2,
		CacheDir: filepath.Join(t.TempDir(), "verdicts")}}
	var _ pipeline.KernelDrafter = sd
	c, err := sd.Draft(context.Background(), k, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := sd.Outcome(k.ID)
	if o == nil || o.Status != StatusProven || o.Rounds != 2 || c.Drafter != "llm" || c.Calls != 2 || !strings.Contains(c.Module, "def run(") {
		t.Fatalf("candidate %+v outcome %+v", c, o)
	}
	// The first prompt carried the discovered unit and the launch site.
	first := srv.Requests()[0].LastUser()
	for _, want := range []string{"gelu_kernel", "BEGIN launch sites", "csrc/gelu.cu:", "<<<blocks, kBlockSize"} {
		if !strings.Contains(first, want) {
			t.Errorf("first prompt lacks %q", want)
		}
	}
	if _, err := sd.Draft(context.Background(), k, &pipeline.Feedback{Round: 2}); err == nil {
		t.Error("a feedback round must be refused (repairs run inside the first call)")
	}
}
