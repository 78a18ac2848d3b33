package pallas_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/pallas"
)

// TestDraftNeverPanics drafts every kernel found under the repository's
// fixtures and emulator test data: each draft is a module or a coded
// refusal, never a panic or an uncoded error.
func TestDraftNeverPanics(t *testing.T) {
	ctx := context.Background()
	n, drafted := 0, 0
	for _, root := range []string{"../../fixtures", "../../validators/emulator/testdata", "testdata"} {
		if _, err := os.Stat(root); err != nil {
			continue
		}
		inv, _ := kernels.Discover(ctx, root, nil)
		for _, k := range inv.Kernels {
			n++
			res, err := pallas.Draft(ctx, k, pallas.Options{})
			if err != nil {
				if r, ok := pallas.AsRefusal(err); !ok {
					t.Errorf("%s %s: uncoded error %v", filepath.Join(root, k.Path), k.Name, err)
				} else {
					t.Logf("%s %s (%s): %s", filepath.Join(root, k.Path), k.Name, k.Class, r)
				}
				continue
			}
			if res.Module == "" {
				t.Errorf("%s: empty module", k.Name)
			}
			drafted++
		}
	}
	t.Logf("%d kernels, %d drafted", n, drafted)
}

// TestDraftPrefixes drafts every prefix (at 40 cut points) of each fixture
// kernel's isolated unit: always a module or a coded refusal.
func TestDraftPrefixes(t *testing.T) {
	ctx := context.Background()
	inv, _ := kernels.Discover(ctx, "../../fixtures/kernels", nil)
	for _, k := range inv.Kernels {
		if k.Unit == nil || k.Spec == nil {
			continue
		}
		src := k.Unit.Source
		for i := 1; i <= 40; i++ {
			kk := *k
			u := *k.Unit
			u.Source = src[:len(src)*i/40]
			kk.Unit = &u
			if _, err := pallas.Draft(ctx, &kk, pallas.Options{}); err != nil {
				if r, ok := pallas.AsRefusal(err); !ok || r.Code == pallas.CodeInternal {
					t.Errorf("%s prefix %d/40: %v", k.Name, i, err)
				}
			}
		}
	}
}
