package distributed_test

import (
	"flag"
	"testing"

	"github.com/pallasify/pallasify/transforms/device/devtest"
	"github.com/pallasify/pallasify/transforms/distributed"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestGolden(t *testing.T) { devtest.Golden(t, distributed.Rules, "testdata", *update) }

func TestExamples(t *testing.T) { devtest.CheckExamples(t, distributed.Rules) }
