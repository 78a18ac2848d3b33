package tpuperf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
)

// TestSecondPassNoNewFinding runs the whole registry over every golden
// input of the family, for both targets, then again over the output: a
// PTP finding of the second pass must have been reported, with the same
// message, by the first. The other families rewrite code inside the sites
// these rules report (.cuda() becomes .to(DEVICE), torch.cuda.device_count()
// becomes torch.accelerator.device_count()), so a message that quoted the
// site would be new on the second pass.
func TestSecondPassNoNewFinding(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*", "input.py"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	all := transforms.All()
	for _, in := range inputs {
		src, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range rule.Targets {
			first := ruletest.Run(t, all, rule.Options{Target: tg}, src)
			seen := map[string]bool{}
			for _, f := range first.Findings {
				seen[f.Code+" "+f.Message] = true
			}
			second := ruletest.Run(t, all, rule.Options{Target: tg}, ruletest.Output(first, src))
			for _, f := range second.Findings {
				if strings.HasPrefix(f.Code, "PTP") && !seen[f.Code+" "+f.Message] {
					t.Errorf("%s (%s): line %d: new on the second pass: %s %s", in, tg, f.Line, f.Code, f.Message)
				}
			}
		}
	}
}
