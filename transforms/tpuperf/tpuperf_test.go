package tpuperf_test

import (
	"flag"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule/ruletest"
	"github.com/pallasify/pallasify/transforms/tpuperf"
)

var update = flag.Bool("update", false, "rewrite the want files")

func TestGolden(t *testing.T) {
	ruletest.Golden(t, tpuperf.Rules, "testdata", *update, ruletest.Hazards)
}

func TestDocs(t *testing.T) { ruletest.Docs(t, tpuperf.Rules) }
