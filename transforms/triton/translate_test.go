package triton

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestTranslateFixtures drafts every fixture kernel the rules cover and
// refuses the others with the expected code.
func TestTranslateFixtures(t *testing.T) {
	inv, err := Discover(context.Background(), filepath.Join("..", "..", "fixtures", "triton"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"scaled_add_kernel":    ModeFlat,
		"softmax_kernel":       ModeRow,
		"rmsnorm_fwd_kernel":   ModeRow,
		"rmsnorm_bwd_kernel":   ModeRow,
		"layernorm_fwd_kernel": ModeRow,
		"bias_gelu_kernel":     CodeAddress,
		"cross_entropy_kernel": CodeAddress,
		"matmul_kernel":        CodeShape,
	}
	for _, k := range inv.Kernels {
		a, src, err := Translate(context.Background(), inv, k)
		got := ""
		if err != nil {
			r, ok := AsRefusal(err)
			if !ok {
				t.Errorf("%s: %v", k.Name, err)
				continue
			}
			got = r.Code
			t.Logf("%s: refused %v", k.Name, err)
		} else {
			got = a.Mode
			if _, _, err := Spec(a); err != nil {
				t.Errorf("%s: spec: %v", k.Name, err)
			}
			if os.Getenv("PALLASIFY_DUMP") != "" {
				t.Logf("%s:\n%s", k.Name, src)
			}
		}
		if got != want[k.Name] {
			t.Errorf("%s: got %s, want %s", k.Name, got, want[k.Name])
		}
	}
}
