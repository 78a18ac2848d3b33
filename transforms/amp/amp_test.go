package amp_test

import (
	"flag"
	"testing"

	"github.com/pallasify/pallasify/transforms/amp"
	"github.com/pallasify/pallasify/transforms/device/devtest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestGolden(t *testing.T) { devtest.Golden(t, amp.Rules, "testdata", *update) }

func TestExamples(t *testing.T) { devtest.CheckExamples(t, amp.Rules) }
