package triton

import (
	"context"
	"fmt"
	"strings"

	"github.com/pallasify/pallasify/transforms/pallas"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Lazy Triton: every Python file beside an ops module (the launching
// files, the kernels' own, the helpers they import) imports triton only
// where it is installed. Each run of
// consecutive top-level triton imports goes under try; where the import
// fails (a TPU host without Triton) the names they bind are the ops
// module's stand-ins (missingTritonHelper), so the module still defines its
// kernels and wrappers and the launches' tpu branch runs the Pallas kernel.
// With Triton installed nothing changes: the same imports bind the same
// names, and every other device keeps the Triton launch.

// tritonImport is one top-level import statement of triton names: its
// bytes and the names it binds, each with the dotted triton name it binds.
type tritonImport struct {
	start, end int
	binds      [][2]string // (name, dotted triton name)
}

// lazyTriton returns src with its top-level triton imports made optional
// (src unchanged when it has none, when one is a wildcard import, or when
// one statement mixes triton and other modules).
func lazyTriton(ctx context.Context, src string, pkg bool) string {
	parser := ts.NewParser(ts.Python)
	defer parser.Close()
	tree, err := parser.Parse(ctx, []byte(src))
	if err != nil {
		return src
	}
	defer tree.Close()
	b := []byte(src)
	var imps []tritonImport
	for _, c := range ts.Children(tree.Root()) {
		ti, isTriton, ok := readTritonImport(c, b)
		if !ok {
			return src
		}
		if isTriton {
			imps = append(imps, ti)
		}
	}
	if len(imps) == 0 {
		return src
	}
	from := "from " + OpsModule + " import missing_triton as _missing_triton"
	if pkg {
		from = "from ." + OpsModule + " import missing_triton as _missing_triton"
	}
	out := src
	runs := importRuns(src, imps)
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		start, end := r[0].start, r[len(r)-1].end
		var t strings.Builder
		t.WriteString("try:\n")
		for _, line := range strings.Split(src[start:end], "\n") {
			t.WriteString("    " + line + "\n")
		}
		t.WriteString("except ImportError:  # no Triton here (a TPU host): tensors on \"tpu\" take the Pallas kernels\n")
		t.WriteString("    " + from + "\n\n") // ruff format: an empty line after the import
		for _, im := range r {
			for _, bd := range im.binds {
				fmt.Fprintf(&t, "    %s = _missing_triton(%q)\n", bd[0], bd[1])
			}
		}
		g := strings.TrimSuffix(t.String(), "\n")
		out = out[:start] + pallas.BlankBefore(out, start, g) + g + out[end:]
	}
	return out
}

// importRuns groups imps into runs of statements with only line breaks
// between them.
func importRuns(src string, imps []tritonImport) [][]tritonImport {
	var runs [][]tritonImport
	for i, im := range imps {
		if i > 0 && strings.TrimSpace(src[imps[i-1].end:im.start]) == "" && !strings.Contains(src[imps[i-1].end:im.start], "\n\n") {
			runs[len(runs)-1] = append(runs[len(runs)-1], im)
			continue
		}
		runs = append(runs, []tritonImport{im})
	}
	return runs
}

// readTritonImport reads a top-level statement: whether it imports triton
// names (and which), and ok false for one lazyTriton cannot make optional.
func readTritonImport(c *ts.Node, src []byte) (tritonImport, bool, bool) {
	ti := tritonImport{start: int(c.StartByte()), end: int(c.EndByte())}
	isTritonName := func(s string) bool { return s == "triton" || strings.HasPrefix(s, "triton.") }
	switch c.Type() {
	case "import_statement":
		triton, other := 0, 0
		for _, n := range ts.Children(c) {
			switch n.Type() {
			case "dotted_name":
				name := ts.Text(n, src)
				if !isTritonName(name) {
					other++
					continue
				}
				triton++
				top, _, _ := strings.Cut(name, ".")
				ti.binds = append(ti.binds, [2]string{top, top})
			case "aliased_import":
				name := ts.Text(n.ChildByFieldName("name"), src)
				if !isTritonName(name) {
					other++
					continue
				}
				triton++
				ti.binds = append(ti.binds, [2]string{ts.Text(n.ChildByFieldName("alias"), src), name})
			}
		}
		if triton == 0 {
			return ti, false, true
		}
		return ti, true, other == 0
	case "import_from_statement":
		mod := c.ChildByFieldName("module_name")
		if mod == nil || !isTritonName(ts.Text(mod, src)) {
			return ti, false, true
		}
		m := ts.Text(mod, src)
		for _, n := range ts.Children(c) {
			if n.StartByte() <= mod.StartByte() {
				continue
			}
			switch n.Type() {
			case "wildcard_import":
				return ti, true, false
			case "dotted_name":
				name := ts.Text(n, src)
				ti.binds = append(ti.binds, [2]string{name, m + "." + name})
			case "aliased_import":
				name := ts.Text(n.ChildByFieldName("name"), src)
				ti.binds = append(ti.binds, [2]string{ts.Text(n.ChildByFieldName("alias"), src), m + "." + name})
			}
		}
		return ti, true, len(ti.binds) > 0
	}
	return ti, false, true
}

// missingTritonHelper is the ops module's stand-in for Triton where it is
// not installed: what a module defining Triton kernels and their wrappers
// needs to import and to reach the tpu branch of its launches.
const missingTritonHelper = `

def _no_triton(what):
    return RuntimeError(f"Triton is not installed: {what} needs it (tpu tensors take Pallas)")


class _Unlaunchable:
    """A @triton.jit function where Triton is not installed: defined, never launched."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __getitem__(self, grid):
        raise _no_triton(f"launching {self.fn.__name__}")

    def __call__(self, *args, **kwargs):
        raise _no_triton(f"calling {self.fn.__name__}")


def _jit(fn=None, **options):
    return _jit if fn is None else _Unlaunchable(fn)


def _keep(*args, **kwargs):
    """@triton.autotune(...) and @triton.heuristics(...): the function as it is."""
    return lambda fn: fn


class _Config:
    """triton.Config(kwargs, num_warps=..., ...)."""

    def __init__(self, kwargs=None, **options):
        self.kwargs, self.options = dict(kwargs or {}), options


class _Constexpr:
    """tl.constexpr: an annotation, or a value (.value)."""

    def __init__(self, value=None):
        self.value = value.value if isinstance(value, _Constexpr) else value


def _cdiv(x, y):
    return (x + (y - 1)) // y


def _next_power_of_2(n):
    """triton.next_power_of_2, computed as Triton does."""
    n -= 1
    n |= n >> 1
    n |= n >> 2
    n |= n >> 4
    n |= n >> 8
    n |= n >> 16
    n |= n >> 32
    n += 1
    return n


_STAND_INS = {
    "triton.jit": _jit,
    "triton.autotune": _keep,
    "triton.heuristics": _keep,
    "triton.Config": _Config,
    "triton.cdiv": _cdiv,
    "triton.next_power_of_2": _next_power_of_2,
    "triton.language.constexpr": _Constexpr,
}


class _Missing:
    """A Triton module or name absent here (its attributes too): using one raises."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return missing_triton(self._name + "." + attr)

    def __call__(self, *args, **kwargs):
        raise _no_triton(self._name)

    def __getitem__(self, key):
        raise _no_triton(self._name)

    def __repr__(self):
        return f"<{self._name}: Triton is not installed>"


def missing_triton(name):
    """What the dotted Triton name binds where Triton is not installed (a TPU host).

    @triton.jit keeps the function (a launch of it raises), @triton.autotune and @triton.heuristics
    keep it as it is, tl.constexpr annotates, triton.cdiv and triton.next_power_of_2 compute as
    Triton does; any other use raises a RuntimeError naming what needs Triton.
    """
    return _STAND_INS.get(name) or _Missing(name)
`
