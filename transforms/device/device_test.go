package device_test

import (
	"flag"
	"testing"

	"github.com/pallasify/pallasify/transforms/device"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestGolden(t *testing.T) { ruletest.Golden(t, device.Rules, "testdata", *update, ruletest.Device) }

func TestDocs(t *testing.T) { ruletest.Docs(t, device.Rules) }
