package hf_test

import (
	"flag"
	"testing"

	"github.com/pallasify/pallasify/transforms/hf"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
)

var update = flag.Bool("update", false, "rewrite the want files")

func TestGolden(t *testing.T) { ruletest.Golden(t, hf.Rules, "testdata", *update, ruletest.Hazards) }

func TestDocs(t *testing.T) { ruletest.Docs(t, hf.Rules) }
