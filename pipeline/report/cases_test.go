package report

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestJSONKernelCases: a kernel row carries its verdict's per-case results
// in the JSON report (cases: sizes, output, dtype, shape, errors, the error
// over the tolerance); a row without them has no cases key (sample.json).
func TestJSONKernelCases(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, Build(htmlRun(), "migrate", rules), JSON); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Kernels []map[string]json.RawMessage `json:"kernels"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Kernels) != 3 {
		t.Fatalf("%d kernels", len(doc.Kernels))
	}
	if _, ok := doc.Kernels[0]["cases"]; ok {
		t.Error("a kernel without per-case results has a cases key")
	}
	var cases []map[string]any
	if err := json.Unmarshal(doc.Kernels[2]["cases"], &cases); err != nil || len(cases) != 8 {
		t.Fatalf("the rejected kernel's cases: %d, %v", len(cases), err)
	}
	c := cases[7]
	for _, k := range []string{"sizes", "output", "dtype", "shape", "seed", "distribution", "max_abs", "max_rel", "ulp_max", "mismatches",
		"nan_mask_ok", "rtol", "atol", "tol_ratio"} {
		if _, ok := c[k]; !ok {
			t.Errorf("case lacks %s: %v", k, c)
		}
	}
	if c["dtype"] != "float32" || c["mismatches"] != 5.0 {
		t.Errorf("case %v", c)
	}
}
