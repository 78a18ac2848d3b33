package hf_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms/compile"
	"github.com/pallasify/pallasify/transforms/cudaapi"
	"github.com/pallasify/pallasify/transforms/device"
	"github.com/pallasify/pallasify/transforms/hazards"
	"github.com/pallasify/pallasify/transforms/hf"
	"github.com/pallasify/pallasify/transforms/rule"
)

func TestScratchFixtures(t *testing.T) {
	out := os.Getenv("SCRATCH_OUT")
	if out == "" {
		t.Skip()
	}
	var rules []*rule.Rule
	for _, f := range [][]*rule.Rule{device.Rules, cudaapi.Rules, hf.Rules, compile.Rules, hazards.Rules} {
		rules = append(rules, f...)
	}
	dirs, _ := filepath.Glob("../../fixtures/projects/*")
	for _, d := range dirs {
		for _, tg := range rule.Targets {
			for _, unsafe := range []bool{false, true} {
				run, err := pipeline.Migrate(context.Background(), pipeline.Options{Root: d, Target: tg, Rules: rules, UnsafeFixes: unsafe, Mark: os.Getenv("MARK") != "", Exclude: []string{"want.*.patch"}})
				if err != nil {
					t.Fatal(err)
				}
				name := filepath.Base(d) + "." + string(tg)
				if unsafe {
					name += ".unsafe"
				}
				os.WriteFile(filepath.Join(out, name+".patch"), run.Patch(), 0o644)
				var diags []byte
				for _, f := range run.Files {
					if f.Skipped != "" {
						diags = append(diags, []byte(f.Path+": SKIPPED "+f.Skipped+"\n")...)
					}
					for _, dg := range f.Diagnostics {
						diags = append(diags, []byte(f.Path+":"+itoa(dg.Line)+": "+dg.Code+" ["+dg.Safety+" applied="+btoa(dg.Applied)+" "+dg.Skipped+"] "+dg.Message+"\n")...)
					}
				}
				for _, dg := range run.Diagnostics {
					diags = append(diags, []byte("RUN: "+dg.Code+" "+dg.Message+"\n")...)
				}
				os.WriteFile(filepath.Join(out, name+".diag"), diags, 0o644)
			}
		}
	}
}

func itoa(i int) string {
	s := ""
	if i == 0 {
		return "0"
	}
	for i > 0 {
		s = string(rune('0'+i%10)) + s
		i /= 10
	}
	return s
}

func btoa(b bool) string {
	if b {
		return "y"
	}
	return "n"
}
