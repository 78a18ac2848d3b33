package hf_test

import (
	"flag"
	"testing"

	"github.com/pallasify/pallasify/transforms/hazards/ruletest"
	"github.com/pallasify/pallasify/transforms/hf"
)

var update = flag.Bool("update", false, "rewrite the want files")

func TestGolden(t *testing.T) { ruletest.Golden(t, hf.Rules, "testdata", *update) }

func TestDocs(t *testing.T) { ruletest.Docs(t, hf.Rules) }
