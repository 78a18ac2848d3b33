package pipeline

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
)

func TestKernelStage(t *testing.T) {
	root := filepath.Join("..", "fixtures", "kernels")
	paths, err := kernels.ListFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	r := &Run{Root: root}
	for _, p := range paths {
		r.Files = append(r.Files, &File{Path: p, Lang: langOf(p)})
	}
	st := NewKernelStage()
	var s Stage = st
	if s.Name() != StageKernels {
		t.Fatalf("name %q", s.Name())
	}
	if err := s.Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if len(r.Kernels) != 15 {
		t.Fatalf("%d kernels, want 15 (12 fixtures + inline + cupy + triton)", len(r.Kernels))
	}
	status := map[string]int{}
	for _, k := range r.Kernels {
		status[k.SpecStatus]++
		if k.ID == "" || k.Class == "" || k.EmuStatus == "" || st.Lookup(k.ID) == nil {
			t.Errorf("incomplete kernel %+v", k)
		}
	}
	if status[kernels.SpecInferred] != 14 || status[kernels.SpecNeedsSpec] != 1 {
		// leaky_relu_vec4 takes float4 pointers, which carry no dtype: needs-spec;
		// the Triton kernel's spec comes from its translated launch (inferred).
		t.Errorf("spec statuses %v", status)
	}
	codes := map[string]int{}
	for _, f := range r.Files {
		for _, d := range f.Diagnostics {
			codes[d.Code]++
		}
	}
	if codes[kernels.CodeFound] != 14 || codes[kernels.CodeNeedsSpec] != 1 || codes[kernels.CodeInventory] != 0 {
		// PKN007 stays only for a Triton kernel the Triton stage does not take.
		t.Errorf("diagnostics %v", codes)
	}
	for _, c := range KernelCodes() {
		if c.Code == "" || c.Title == "" || c.Doc == "" {
			t.Errorf("undocumented code %+v", c)
		}
	}
}

// TestStaleSpecRequestDropped: a PKN002 "needs a spec" note is dropped once
// the kernel has a spec (the capture stage's), kept while it has none.
func TestStaleSpecRequestDropped(t *testing.T) {
	captured := &kernels.Kernel{ID: "k-1", Spec: &kernels.Spec{Name: "a"}}
	missing := &kernels.Kernel{ID: "k-2"}
	inv := &kernels.Inventory{Kernels: []*kernels.Kernel{captured, missing}}
	for _, c := range []struct {
		p    kernels.Problem
		drop bool
	}{
		{kernels.Problem{Code: kernels.CodeNeedsSpec, Kernel: "k-1"}, true},
		{kernels.Problem{Code: kernels.CodeNeedsSpec, Kernel: "k-2"}, false},
		{kernels.Problem{Code: kernels.CodeFound, Kernel: "k-1"}, false},
	} {
		if got := staleSpecRequest(c.p, inv); got != c.drop {
			t.Errorf("%s on %s: dropped %v, want %v", c.p.Code, c.p.Kernel, got, c.drop)
		}
	}
}
