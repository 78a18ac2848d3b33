package device_test

import (
	"os"
	"slices"
	"testing"

	"github.com/pallasify/pallasify/transforms/device"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
)

// TestDeviceTypeListFindings: a list of device types with "cuda" and not
// "tpu" is reported (timm's capturable_supported_devices was silent), on
// both targets; one with "tpu", a mixed list, a single name and a literal
// tested directly with `in` (PDV003's) are not.
func TestDeviceTypeListFindings(t *testing.T) {
	src, err := os.ReadFile("testdata/device-type-list/input.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range rule.Targets {
		var lines []int
		for _, f := range ruletest.Run(t, []*rule.Rule{device.DeviceTypeList}, rule.Options{Target: tg}, src).Findings {
			lines = append(lines, f.Line)
		}
		if want := []int{3, 15}; !slices.Equal(lines, want) {
			t.Errorf("%s: PDV007 on lines %v, want %v", tg, lines, want)
		}
	}
}

// TestDevicePrefixTestFinding: `device.startswith("cuda:")` is reported
// (timm's init_distributed_device left it silent) without a fix; a label's
// startswith is not.
func TestDevicePrefixTestFinding(t *testing.T) {
	src, err := os.ReadFile("testdata/device-type-compare.prefix/input.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range rule.Targets {
		var lines []int
		for _, f := range ruletest.Run(t, []*rule.Rule{device.DeviceTypeCompare}, rule.Options{Target: tg}, src).Findings {
			if f.Fix != nil {
				t.Errorf("%s line %d: a fix for %q", tg, f.Line, f.Message)
			}
			lines = append(lines, f.Line)
		}
		if want := []int{6}; !slices.Equal(lines, want) {
			t.Errorf("%s: PDV003 on lines %v, want %v", tg, lines, want)
		}
	}
}

// TestTypedIndexFromElsewhere: f"{device_type}:{local_rank}" where the type
// is parsed from an argument (timm's init_distributed_device) is reported
// without a fix on both targets (it is "tpu:<rank>" on a TPU host); a label
// built the same way is not.
func TestTypedIndexFromElsewhere(t *testing.T) {
	src, err := os.ReadFile("testdata/cuda-device-variable.typed-index/input.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range rule.Targets {
		var lines []int
		for _, f := range ruletest.Run(t, []*rule.Rule{device.CudaDeviceVariable}, rule.Options{Target: tg}, src).Findings {
			if f.Line == 7 && f.Fix != nil {
				t.Errorf("%s line 7: a fix for %q", tg, f.Message)
			}
			lines = append(lines, f.Line)
		}
		if !slices.Contains(lines, 7) || slices.Contains(lines, 9) {
			t.Errorf("%s: PDV006 on lines %v, want 7 and not 9", tg, lines)
		}
	}
}
