package main

import (
	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/config"
)

// benchFlags are migrate's --bench and --bench-dir: write pallasify_bench.py
// (pipeline/bench), also asked for by pallasify.yaml's `bench:`.
type benchFlags struct {
	On  bool
	Dir string
}

func (b *benchFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&b.On, "bench", false, "also write pallasify_bench.py: times a training (or inference) step of the repository's model "+
		"on the host's device, CUDA, TPU or CPU (python pallasify_bench.py --price-per-hour 4.20 adds the cost per million items)")
	fl.StringVar(&b.Dir, "bench-dir", "", "the `DIR` pallasify_bench.py goes to, relative to the root (default: the root; implies --bench)")
}

// options are the pipeline's benchmark options: the flags over the config
// file's `bench:` (an explicit --bench=false wins over the file: explicit
// names the flags given); nil when no script is asked for.
func (b *benchFlags) options(cfg *config.Config, explicit map[string]bool) *pipeline.BenchOptions {
	var c config.BenchConfig
	if cfg != nil {
		c = cfg.Bench
	}
	on := b.On || b.Dir != "" || (!explicit["bench"] && c.Enabled)
	if !on {
		return nil
	}
	o := &pipeline.BenchOptions{Dir: c.Dir, Config: c.Config}
	if b.Dir != "" {
		o.Dir = b.Dir
	}
	return o
}
