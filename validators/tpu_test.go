package validators

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseTPUChips(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		off  bool
		bad  bool
	}{
		{in: "v5e,v6e,tpu7x", want: []string{"v5e", "v6e", "tpu7x"}},
		{in: " v6e , v5e,v6e", want: []string{"v6e", "v5e"}},
		{in: "none", off: true},
		{in: "v4", bad: true},
		{in: "v5e,h100", bad: true},
		{in: " , ", bad: true},
	} {
		got, off, err := ParseTPUChips(tc.in)
		if (err != nil) != tc.bad || off != tc.off || !slices.Equal(got, tc.want) {
			t.Errorf("ParseTPUChips(%q) = %v, %v, %v; want %v, %v, error %v", tc.in, got, off, err, tc.want, tc.off, tc.bad)
		}
	}
}

func TestCacheKeyIncludesTPUChips(t *testing.T) {
	req := Request{Candidate: []byte("c"), ReferencePy: "r.py"}
	spec, ref := []byte("{}"), []byte("ref")
	def := CacheKey(req, spec, ref, Options{})
	if def != CacheKey(req, spec, ref, Options{TPUChips: DefaultTPUChips}) {
		t.Error("nil chips and the default chips must share a key")
	}
	for _, o := range []Options{{TPUChips: []string{"v5e"}}, {TPUChips: []string{"tpu7x", "v5e"}}, {NoTPUCompile: true}} {
		if CacheKey(req, spec, ref, o) == def {
			t.Errorf("%+v: same cache key as the default chips", o)
		}
	}
}

// requireLibTPU runs the harness's probe; without libtpu the test skips, or
// fails under PALLASIFY_REQUIRE_STACK=1.
func requireLibTPU(t *testing.T, py string) harnessProbe {
	t.Helper()
	dir := t.TempDir()
	if err := writeHarness(filepath.Join(dir, "harness")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-m", "pallasify_harness", "--probe")
	cmd.Env = append(harnessEnv(dir), "HOME="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("probe: %v: %s", err, lastLine(errb.String()))
	}
	var p harnessProbe
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("probe output: %v", err)
	}
	if p.TPU.LibTPU == nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
			t.Fatalf("libtpu is not installed in %s [PALLASIFY_REQUIRE_STACK=1]", py)
		}
		t.Skipf("libtpu is not installed in %s (make venv)", py)
	}
	return p
}

// TestTPUChipsMatchHarness keeps Go's chip names equal to the harness's
// chip table.
func TestTPUChipsMatchHarness(t *testing.T) {
	p := requireLibTPU(t, testPython(t))
	if !slices.Equal(p.TPU.Chips, KnownTPUChips) || !slices.Equal(p.TPU.Default, DefaultTPUChips) {
		t.Errorf("harness chips %v (default %v), Go %v (default %v)", p.TPU.Chips, p.TPU.Default, KnownTPUChips, DefaultTPUChips)
	}
}

// TestTPUCompileGate: a proven candidate records every chip; one that only
// interpret mode accepts is V-TPU-COMPILE with the chip and the compiler's
// message; the chip list and the off switch reach the harness.
func TestTPUCompileGate(t *testing.T) {
	py := testPython(t)
	requireLibTPU(t, py)
	noSB := (&sbWrap{}).check() != nil
	ctx := context.Background()
	opt := Options{Python: py, NoSandbox: noSB, Quick: true, Seeds: 2, Timeout: 120 * time.Second}
	bad, err := os.ReadFile("harness/tests/data/axpy/tpu_block.py")
	if err != nil {
		t.Fatal(err)
	}
	v, err := Validate(ctx, axpyRequest(t, goodAxpy(t)), opt)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Proven() || !slices.Equal(v.TPUChips(), DefaultTPUChips) {
		t.Fatalf("good axpy: %s %s, chips %v\n%s", v.Verdict, v.Reason, v.TPUChips(), v.Output)
	}
	for c, r := range v.TPU {
		if !r.Compiled || r.BytesAccessed <= 0 || r.MinBytes <= 0 || r.RooflineS <= 0 || r.CompileS <= 0 || r.Shape["n"] == 0 {
			t.Errorf("%s: %+v", c, r)
		}
	}
	if s := Summary(v); !strings.Contains(s, "tpu tpu7x") || !strings.Contains(s, "HBM roofline") || !strings.Contains(s, "tpu_compile=ok") {
		t.Errorf("summary lacks the TPU gate:\n%s", s)
	}

	o := opt
	o.TPUChips = []string{"v6e"}
	v, err = Validate(ctx, axpyRequest(t, string(bad)), o)
	if err != nil {
		t.Fatal(err)
	}
	if v.Code() != "V-TPU-COMPILE" || !strings.Contains(v.Reason, "v6e") || !strings.Contains(v.Reason, "Pallas TPU lowering") {
		t.Fatalf("tpu_block: %s %s", v.Verdict, v.Reason)
	}
	if r, ok := v.TPU["v6e"]; !ok || r.Compiled || r.Error == "" || len(v.TPU) != 1 {
		t.Errorf("tpu_block: per-chip record %+v", v.TPU)
	}

	o = opt
	o.NoTPUCompile = true
	v, err = Validate(ctx, axpyRequest(t, string(bad)), o)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Proven() || len(v.TPU) != 0 || !strings.HasPrefix(v.TPUGate, "off") {
		t.Errorf("gate off: %s %s, tpu %v, gate %q", v.Verdict, v.Reason, v.TPU, v.TPUGate)
	}
}
