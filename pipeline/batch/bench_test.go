package batch_test

import (
	"testing"

	"github.com/pallasify/pallasify/pipeline/batch"
	"github.com/pallasify/pallasify/pipeline/config"
)

// TestPipelineOptionsBench: a repository's `bench:` asks batch and bot runs
// for the benchmark script as it asks migrate.
func TestPipelineOptionsBench(t *testing.T) {
	cfg := config.Defaults()
	if o := batch.PipelineOptions("r", cfg, "v"); o.Bench != nil {
		t.Errorf("bench off: %+v", o.Bench)
	}
	cfg.Bench = config.BenchConfig{Enabled: true, Dir: "tools"}
	cfg.Bench.Model = "pkg.m:net"
	if o := batch.PipelineOptions("r", cfg, "v"); o.Bench == nil || o.Bench.Dir != "tools" || o.Bench.Model != "pkg.m:net" {
		t.Errorf("bench on: %+v", o.Bench)
	}
}
