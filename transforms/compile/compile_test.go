package compile_test

import (
	"flag"
	"testing"

	"github.com/pallasify/pallasify/transforms/compile"
	"github.com/pallasify/pallasify/transforms/hazards"
	"github.com/pallasify/pallasify/transforms/hf"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
)

var update = flag.Bool("update", false, "rewrite the want files")

func TestGolden(t *testing.T) {
	ruletest.Golden(t, compile.Rules, "testdata", *update, ruletest.Hazards)
}

func TestDocs(t *testing.T) { ruletest.Docs(t, compile.Rules) }

// TestRobustTogether runs the three families of this tree together over every
// testdata input: compile-dependent findings (PCM003, PDX005) must reach their
// fixed point in the same pass as the opt-in PCM002 wrap.
func TestRobustTogether(t *testing.T) {
	var all []*rule.Rule
	all = append(append(append(all, hf.Rules...), compile.Rules...), hazards.Rules...)
	for _, dir := range []string{"testdata", "../hf/testdata", "../hazards/testdata"} {
		ruletest.Robust(t, all, dir)
	}
}
