package report

import (
	"testing"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms/compile"
	"github.com/pallasify/pallasify/transforms/device"
	"github.com/pallasify/pallasify/transforms/rule"
)

// TestOptInIsNotWork: an unapplied opt-in suggestion (PCM002) is counted
// apart, not as a site a human must handle, and leaves the effort estimate
// alone; applied (--unsafe-fixes), it is an auto-fixed site like any other.
func TestOptInIsNotWork(t *testing.T) {
	rules := []*rule.Rule{compile.WrapModel, device.CudaDeviceString}
	build := func(optInApplied bool) *Report {
		run := &pipeline.Run{Root: "/r", Files: []*pipeline.File{{Path: "train.py", Lang: pipeline.LangPython, Lines: 10,
			Diagnostics: []pipeline.Diagnostic{
				{Code: compile.WrapModel.Code, Rule: compile.WrapModel.Name, Path: "train.py", Line: 3, Applied: optInApplied},
				{Code: device.CudaDeviceString.Code, Rule: device.CudaDeviceString.Name, Path: "train.py", Line: 5, Applied: true},
			}}}}
		return Build(run, "analyze", rules)
	}
	rep := build(false)
	if rep.Sites != 2 || rep.AutoFixable != 1 || rep.Manual != 0 || rep.OptIn != 1 || len(rep.ManualSites) != 0 {
		t.Errorf("sites %d auto %d manual %d opt-in %d manual sites %d; want 2 1 0 1 0",
			rep.Sites, rep.AutoFixable, rep.Manual, rep.OptIn, len(rep.ManualSites))
	}
	if rep.Effort.Level != "low" || rep.Effort.Manual != 0 || rep.Effort.AutoShare != 1 {
		t.Errorf("effort %+v; want low with nothing manual", rep.Effort)
	}
	for _, rc := range rep.ByRule {
		if rc.Code == compile.WrapModel.Code && (rc.OptIn != 1 || rc.Manual != 0) {
			t.Errorf("PCM002 row %+v; want opt_in 1, manual 0", rc)
		}
	}
	if rep := build(true); rep.AutoFixable != 2 || rep.OptIn != 0 || rep.Effort.AutoShare != 1 {
		t.Errorf("applied: auto %d opt-in %d share %v; want 2 0 1", rep.AutoFixable, rep.OptIn, rep.Effort.AutoShare)
	}
}
