package distributed_test

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/distributed"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestGolden(t *testing.T) {
	ruletest.Golden(t, distributed.Rules, "testdata", *update, ruletest.Device)
}

func TestDocs(t *testing.T) { ruletest.Docs(t, distributed.Rules) }

// TestNcclBackendCheck checks which comparisons nccl-backend-check (PDS004)
// reports: the backend (get_backend(), a name assigned from it, a *backend*
// name or attribute) against "nccl" or dist.Backend.NCCL, on both targets.
func TestNcclBackendCheck(t *testing.T) {
	src, err := os.ReadFile("testdata/nccl-backend-check/input.py")
	if err != nil {
		t.Fatal(err)
	}
	want := []int{8, 15, 17, 23, 25}
	for _, tg := range rule.Targets {
		var got []int
		for _, f := range ruletest.Run(t, []*rule.Rule{distributed.NcclBackendCheck}, rule.Options{Target: tg}, src).Findings {
			if f.Code != "PDS004" || !strings.Contains(f.Message, `with TorchTPU it is "tpu_dist"`) {
				t.Errorf("%s: unexpected finding %s %q", tg, f.Code, f.Message)
			}
			got = append(got, f.Line)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: PDS004 on lines %v; want %v", tg, got, want)
		}
	}
}
