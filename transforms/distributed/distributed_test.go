package distributed_test

import (
	"flag"
	"testing"

	"github.com/pallasify/pallasify/transforms/distributed"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestGolden(t *testing.T) {
	ruletest.Golden(t, distributed.Rules, "testdata", *update, ruletest.Device)
}

func TestDocs(t *testing.T) { ruletest.Docs(t, distributed.Rules) }
