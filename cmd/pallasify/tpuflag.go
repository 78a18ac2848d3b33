package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/pallasify/pallasify/validators"
)

// tpuChipsFlag is --tpu-chips: the chips the TPU compile gate compiles a
// proven candidate for ("v5e,v6e,tpu7x" by default), or "none".
type tpuChipsFlag struct {
	chips []string
	off   bool
}

var _ pflag.Value = (*tpuChipsFlag)(nil)

func (f *tpuChipsFlag) String() string {
	if f.off {
		return "none"
	}
	if len(f.chips) == 0 {
		return strings.Join(validators.DefaultTPUChips, ",")
	}
	return strings.Join(f.chips, ",")
}

func (f *tpuChipsFlag) Set(s string) error {
	chips, off, err := validators.ParseTPUChips(s)
	if err != nil {
		return err
	}
	f.chips, f.off = chips, off
	return nil
}

func (f *tpuChipsFlag) Type() string { return "chips" }

// apply sets the chips on validation options.
func (f *tpuChipsFlag) apply(o *validators.Options) {
	o.TPUChips, o.NoTPUCompile = f.chips, f.off
}

func bindTPUChips(fs *pflag.FlagSet, f *tpuChipsFlag) {
	fs.Var(f, "tpu-chips", "TPU chips a proven kernel must compile for (deviceless, with libtpu): comma-separated from "+
		strings.Join(validators.KnownTPUChips, ",")+", or none to skip the TPU compile gate")
}
