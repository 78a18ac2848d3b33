package main

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/validators"
)

// TestXLAMoves: the bench names the XLA data movement a draft's run() and
// kernels call, not what the helper definitions call among themselves.
func TestXLAMoves(t *testing.T) {
	module := `def _kernel(x_ref, o_ref):
    o_ref[...] = x_ref[0]


def run(args, *, interpret):
    ins = [_gather_loop(args["x"], [d + 1 for w in range(3)], DP, LANES)]
    return {"o": _unblock(outs[0], D, (n,), jnp.float32)}


def _gather(a, idx, dp, lanes):
    return jnp.take(a.reshape(-1), idx, mode="clip")


def _gather_loop(a, idxs, dp, lanes):
    return jnp.stack([_gather(a, i, dp, lanes) for i in idxs])
`
	got := xlaMoves(module)
	want := []string{"an XLA gather per loop iteration", "a relayout copy of the output"}
	if !slices.Equal(got, want) {
		t.Fatalf("xlaMoves = %q, want %q", got, want)
	}
	// the plane form: its gathers and _unblock are the fallback's
	plane := strings.Replace(module, "    ins = [", "    x_plane = _plane(args[\"x\"].shape, addrs, ext)\n    ins = [", 1)
	if got := xlaMoves(plane); len(got) != 1 || !strings.HasPrefix(got[0], "the window's plane in VMEM") {
		t.Fatalf("a plane draft: xlaMoves = %q, want the plane form's relayout only", got)
	}
	gather := `def _kernel(x_ref, o_ref):
    o_ref[...] = _vtake(x_ref, x_meta, i)


def run(args, *, interpret):
    if not _vfits(x_in):
        return _run_xla(args, interpret=interpret)
    return {"o": outs[0]}


def _kernel_xla(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def _run_xla(args, *, interpret):
    ins = [_take(args["x"], d, DP, LANES)]
`
	if got, want := xlaMoves(gather), []string{"the XLA form where the gathered arrays exceed the VMEM budget"}; !slices.Equal(got, want) {
		t.Fatalf("an in-kernel gather: xlaMoves = %q, want %q", got, want)
	}
	if got := xlaMoves("def run(args, *, interpret):\n    return {\"o\": outs[0]}\n"); len(got) != 0 {
		t.Fatalf("an in-place draft: xlaMoves = %q, want none", got)
	}
}

// TestTrafficUnmeasured: a drafted kernel without a measurement (rejected,
// timed out, not compiled) has a row saying why and counts against the
// bound: the summary never calls every draft within it.
func TestTrafficUnmeasured(t *testing.T) {
	ok := traffic{Kernel: "gelu", Class: "elementwise", Bytes: 102, Min: 100, LayoutMin: 100}
	timedOut := trafficOf("pattern slow", "elementwise", "", &validators.Verdict{Verdict: "rejected", Reason: "V-TIMEOUT: wall limit 300s exceeded"}, nil)
	failed := trafficOf("pattern broken", "row-reduction", "", nil, errors.New("no python"))
	var b strings.Builder
	printTraffic(&b, []traffic{ok, timedOut, failed})
	out := b.String()
	for _, want := range []string{
		"NOT MEASURED: rejected V-TIMEOUT: wall limit 300s exceeded",
		"NOT MEASURED: validation failed: no python",
		"2 of 3 drafts not measured: pattern broken, pattern slow",
		"every measured draft within 1.25x of its minimum (1 of 3)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("printTraffic lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "every draft within") {
		t.Errorf("printTraffic calls every draft within the bound with two unmeasured:\n%s", out)
	}
	b.Reset()
	printTraffic(&b, []traffic{ok})
	if !strings.Contains(b.String(), "every draft within 1.25x of its minimum") {
		t.Errorf("one measured draft within the bound:\n%s", b.String())
	}
}
