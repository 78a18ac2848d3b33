package amp_test

import (
	"flag"
	"testing"

	"github.com/pallasify/pallasify/transforms/amp"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestGolden(t *testing.T) { ruletest.Golden(t, amp.Rules, "testdata", *update, ruletest.Device) }

func TestDocs(t *testing.T) { ruletest.Docs(t, amp.Rules) }
