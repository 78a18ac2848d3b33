package xla_test

import (
	"flag"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule/ruletest"
	"github.com/pallasify/pallasify/transforms/xla"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestGolden(t *testing.T) { ruletest.Golden(t, xla.Rules, "testdata", *update, ruletest.Hazards) }

func TestDocs(t *testing.T) { ruletest.Docs(t, xla.Rules) }
