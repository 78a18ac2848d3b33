package triton

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of the Triton fixtures")

// TestDiscoverBindings: fixtures/triton_bindings binds kernels by a call
// (kern = triton.jit(fn), inline triton.jit(fn)[grid], under
// triton.autotune(...)(...), triton.jit(do_not_specialize=...)(fn)) and
// launches them through names that are not theirs (a local alias, a dict of
// kernels by dtype, self._kernel, an imported binding). Every kernel is
// found and every launch linked to it; the listing equals want.discover.txt
// (-update rewrites it). check.py runs the same ops under Triton's
// interpreter (TestTritonBindingsFixtureRuns).
func TestDiscoverBindings(t *testing.T) {
	root := filepath.Join("..", "..", "fixtures", "triton_bindings")
	inv, err := Discover(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	got := discoverListing(inv)
	golden := filepath.Join(root, "want.discover.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("discovery differs from %s (-update rewrites it):\n--- got\n%s--- want\n%s", golden, got, want)
	}
	// the helper cube, imported by aliased.py's cube_kernel, is the one kernel never launched
	if h := inv.Kernel("pkg/helpers.py", "cube"); h == nil || inv.Unlaunched != 1 || !inv.CalledFromKernels(h) {
		t.Errorf("helper cube %v: %d kernels never launched (want 1), called from a kernel: %v", h != nil, inv.Unlaunched, h != nil && inv.CalledFromKernels(h))
	}
}

// discoverListing is one line per kernel and one per launch of it.
func discoverListing(inv *Inventory) string {
	var b strings.Builder
	for _, k := range inv.Kernels {
		fmt.Fprintf(&b, "%s:%d %s decorators=%s", k.Path, k.Line, k.Name, strings.Join(k.Decorators, ","))
		if len(k.Bindings) > 0 {
			fmt.Fprintf(&b, " bindings=%s", strings.Join(k.Bindings, ","))
		}
		b.WriteString("\n")
		for _, l := range k.Launches {
			fmt.Fprintf(&b, "  launch %s:%d in %s grid=%s args=%d", l.Path, l.Line, l.Wrapper, l.Grid, len(l.Args))
			if l.Via != "" {
				fmt.Fprintf(&b, " via=%s", l.Via)
			}
			if len(l.Alternatives) > 0 {
				fmt.Fprintf(&b, " alternatives=%s", strings.Join(l.Alternatives, ","))
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "unlaunched %d\n", inv.Unlaunched)
	return b.String()
}
