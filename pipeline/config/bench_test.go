package config

import (
	"fmt"
	"strings"
	"testing"
)

// TestBench: `bench:` is a boolean or a mapping (which turns it on unless
// it says enabled: false), in pallasify.yaml and in [tool.pallasify] alike;
// a key it does not know, a value of the wrong kind and a bad model, step
// or directory are errors with their line.
func TestBench(t *testing.T) {
	for _, c := range []struct {
		yaml, want string
	}{
		{"bench: true\n", "on dir= model= step= shape=[]"},
		{"bench: false\n", "off dir= model= step= shape=[]"},
		{"bench:\n  model: \"pkg.models:small\"\n  step: infer\n  input_shape: [3, 32, 32]\n  dir: tools\n",
			"on dir=tools model=pkg.models:small step=infer shape=[3 32 32]"},
		{"bench:\n  enabled: false\n  model: a.b:c\n", "off dir= model=a.b:c step= shape=[]"},
	} {
		cfg, _, err := Parse(Source{Name: "pallasify.yaml", Data: []byte(c.yaml)})
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		b := cfg.Bench
		on := map[bool]string{true: "on", false: "off"}[b.Enabled]
		if got := fmt.Sprintf("%s dir=%s model=%s step=%s shape=%v", on, b.Dir, b.Model, b.Step, b.InputShape); got != c.want {
			t.Errorf("%q: %s, want %s", c.yaml, got, c.want)
		}
	}
	for _, c := range []struct{ yaml, want string }{
		{"bench:\n  modle: x\n", "pallasify.yaml:2: error: field modle not found in section BenchConfig"},
		{"bench: 3\n", "pallasify.yaml:1: error: bench: want true, false or a mapping"},
		{"bench:\n  step: eval\n", "pallasify.yaml:2: error: bench.step: \"eval\": want train or infer"},
		{"bench:\n  model: pkg.Net\n", "pallasify.yaml:2: error: bench.model: \"pkg.Net\" is not \"package.module:name\""},
		{"bench:\n  dir: ../out\n", "pallasify.yaml:2: error: bench.dir: \"../out\" must be a directory inside the repository"},
	} {
		_, _, err := Parse(Source{Name: "pallasify.yaml", Data: []byte(c.yaml)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.want)
		}
	}
	src, ok, err := Pyproject("pyproject.toml", []byte("[tool.pallasify.bench]\nmodel = \"pkg.models:small\"\ninput_shape = [16]\n"), false)
	if !ok || err != nil {
		t.Fatalf("Pyproject: %v %v", ok, err)
	}
	cfg, _, err := Parse(src)
	if err != nil || !cfg.Bench.Enabled || cfg.Bench.Model != "pkg.models:small" || len(cfg.Bench.InputShape) != 1 {
		t.Errorf("[tool.pallasify.bench]: %+v, %v", cfg.Bench, err)
	}
}
