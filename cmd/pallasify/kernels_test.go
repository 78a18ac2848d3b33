package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms/kernels"
)

// verdictStub stands in for the validator: it proves (or rejects) every draft.
type verdictStub struct{ verdict string }

func (v verdictStub) Validate(ctx context.Context, k *kernels.Kernel, module []byte) (*pipeline.DraftVerdict, error) {
	return &pipeline.DraftVerdict{Verdict: v.verdict, Reason: map[string]string{"rejected": "V-MISMATCH: stub"}[v.verdict],
		Stats: pipeline.ErrorStats{Cases: 3}, Shapes: []string{"n=1", "n=257"}}, nil
}

func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestMigrateKernelStages(t *testing.T) {
	for _, c := range []struct {
		verdict   string
		want, not []string
	}{
		{"proven", []string{"+++ b/inline_act/_pallas_scaled_silu_kernel.py", "_pallas_ops.scaled_silu(x, scale) if x.device.type == \"tpu\" else _ext.scaled_silu(x, scale)\n",
			"Kernel drafts:", "scaled_silu_kernel: proven (rules draft, elementwise), 3 cases over n=1 n=257", "PDR001"}, nil},
		{"rejected", []string{"scaled_silu_kernel: rejected", "V-MISMATCH: stub", "PDR002"}, []string{"_pallas_"}},
	} {
		t.Run(c.verdict, func(t *testing.T) {
			root := copyTree(t, filepath.Join("..", "..", "fixtures", "e2e", "inline_act"))
			o, out := newMigrate(t, root)
			o.Target, o.Rules = "portable", nil
			o.Kernels = kernelFlags{Enabled: true, Validator: verdictStub{c.verdict}}
			if code := exitCode(migrateRun(context.Background(), o)); code != 0 {
				t.Fatalf("exit %d\n%s", code, out)
			}
			s := out.String()
			for _, w := range c.want {
				if !strings.Contains(s, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(s, w) {
					t.Errorf("output has %q", w)
				}
			}
			if t.Failed() {
				t.Log(s)
			}
		})
	}
}
