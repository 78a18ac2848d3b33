package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/validators"
)

func TestTPUChipsFlag(t *testing.T) {
	var f tpuChipsFlag
	if f.String() != "v5e,v6e,tpu7x" {
		t.Errorf("default %q", f.String())
	}
	var o validators.Options
	f.apply(&o)
	if o.TPUChips != nil || o.NoTPUCompile {
		t.Errorf("default applies %+v", o)
	}
	if err := f.Set("tpu7x,v6e"); err != nil {
		t.Fatal(err)
	}
	f.apply(&o)
	if !slices.Equal(o.TPUChips, []string{"tpu7x", "v6e"}) || o.NoTPUCompile || f.String() != "tpu7x,v6e" {
		t.Errorf("tpu7x,v6e: %+v %q", o, f.String())
	}
	if err := f.Set("none"); err != nil {
		t.Fatal(err)
	}
	f.apply(&o)
	if o.TPUChips != nil || !o.NoTPUCompile || f.String() != "none" {
		t.Errorf("none: %+v %q", o, f.String())
	}
}

// TestTPUChipsFlagOnCommands: validate and migrate take --tpu-chips and an
// unknown chip is a usage error (exit 2).
func TestTPUChipsFlagOnCommands(t *testing.T) {
	for _, argv := range [][]string{
		{"validate", "--tpu-chips", "v4", "--kernel-spec", "x.json", "--candidate", "c.py"},
		{"migrate", "--tpu-chips", "v5e,h100", "."},
	} {
		io, _, errb := testStreams()
		if code := run(argv, io); code != 2 || !strings.Contains(errb.String(), "unknown TPU chip") {
			t.Errorf("%v: exit %d, stderr %q", argv, code, errb.String())
		}
	}
	io, out, _ := testStreams()
	if code := run([]string{"validate", "--help"}, io); code != 0 || !strings.Contains(out.String(), "--tpu-chips") {
		t.Errorf("validate --help: exit %d, lacks --tpu-chips", code)
	}
}
