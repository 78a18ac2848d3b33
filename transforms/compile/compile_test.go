package compile_test

import (
	"flag"
	"testing"

	"github.com/pallasify/pallasify/transforms/compile"
	"github.com/pallasify/pallasify/transforms/hazards/ruletest"
)

var update = flag.Bool("update", false, "rewrite the want files")

func TestGolden(t *testing.T) { ruletest.Golden(t, compile.Rules, "testdata", *update) }

func TestDocs(t *testing.T) { ruletest.Docs(t, compile.Rules) }
