package hostbuild

import (
	"strings"
	"testing"
)

// ShimFiles gives the package stand-in for each directory named and every
// file of each dependency's stand-in, from the one table.
func TestShimFiles(t *testing.T) {
	got := ShimFiles([]string{"mmcv", "mmcv/ops"}, []string{"mmengine", "not-a-known-dependency"})
	for _, p := range []string{"mmcv/__init__.py", "mmcv/ops/__init__.py"} {
		if got[p] != PackageInit {
			t.Errorf("%s is not the package stand-in", p)
		}
	}
	for p := range StandIns["mmengine"] {
		if got[p] == "" {
			t.Errorf("mmengine stand-in %s missing", p)
		}
	}
	if len(got) != 2+len(StandIns["mmengine"]) {
		t.Errorf("%d files, want %d: %v", len(got), 2+len(StandIns["mmengine"]), keys(got))
	}
	if !strings.Contains(got["mmengine/registry/__init__.py"], "MODELS = Registry") {
		t.Errorf("mmengine.registry stand-in lacks MODELS")
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
