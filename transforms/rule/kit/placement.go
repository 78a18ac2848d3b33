package kit

import (
	"bytes"
	"path"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Placement of the device definition. An entry script (and a notebook, a
// test module, any file the driver places no tree around) gets the
// module-level DEVICE of DevicePrelude: it runs once, as the program. A
// library module — a file of a walked tree that is imported rather than run
// (Library) — must not initialise the accelerator when it is imported
// (torch.accelerator.is_available() may poison fork on CUDA), so there every
// rewrite names LazyDevice, `pallasify_device()`, a cached function that finds
// the device on its first call. Its definition, the device-index helper and
// the memory helper are shared (rule.Prelude.Share): written once per package
// into the package's helper module (rule.HelperModule, next to the top
// __init__.py) and imported by each library module; a file that cannot
// import relatively imports them by absolute name where it imports a
// package of the tree by name already (HelperFrom), else defines them
// inline, at module level.

// PlacementDoc is the section of every rule page whose portable fix uses
// DEVICE (see Doc).
const PlacementDoc = "The example is an entry script (a file with `if __name__ == \"__main__\":`, a module-level " +
	"`parse_args()` or training loop, or no function or class definition), a test module (`test_*.py`, `conftest.py`, " +
	"`tests/`) or a notebook: there `DEVICE` is defined once, at module level, after the imports, and so are the " +
	"helpers (`device_at`, the memory helper). A library module of a migrated tree — any other `.py` file, imported " +
	"rather than run — must not look for the accelerator when it is imported (on CUDA that poisons fork), so there " +
	"`DEVICE` is `pallasify_device()`, a cached function that finds the device on its first call. In a package it and " +
	"the helpers are written once, into `_pallasify_device.py` next to the top `__init__.py`, and each library module " +
	"imports what it uses (`from .._pallasify_device import device_at`). An entry script, a test, a loose script or a " +
	"module of a namespace directory that already imports a package of the tree by name imports them from that " +
	"package's helper module by the same name (`from pkg._pallasify_device import pallasify_device`, with `DEVICE = " +
	"pallasify_device()` in an entry script); any other file defines them inline. A parameter default of a library function becomes `DEVICE_ON_FIRST_USE`, a sentinel resolved in the body " +
	"(`if device is DEVICE_ON_FIRST_USE: device = pallasify_device().type`; a caller passing `None` still passes " +
	"`None`), a dataclass field a `default_factory`; other module-level uses (a class " +
	"attribute, a decorator argument) still call `pallasify_device()` when the module is imported. The tpu target " +
	"writes these same forms, not `\"tpu\"`, where a device, a tensor or a move is built on import (`DEFAULT = " +
	"torch.device(\"cuda\")`, a default argument, a class attribute, `pytest.param(...)`): a TorchTPU device built " +
	"on import would make the module fail to import on every host without a TPU."

// LazyDevice is the expression library modules use for DEVICE.
const LazyDevice = lazyDeviceFn + "()"

const lazyDeviceFn = "pallasify_device"

// LazyDevicePrelude defines LazyDevice's function (shared where the module
// is in a package).
func LazyDevicePrelude() rule.Prelude {
	return rule.Prelude{
		Key: "00-device",
		Text: "@functools.cache\n" +
			"def " + lazyDeviceFn + "():\n" +
			"    \"\"\"pallasify: the CUDA or TPU device this process uses, else the CPU.\n\n" +
			"    Other accelerators keep the CPU path. Found on the first call, so importing the module does\n" +
			"    not initialise the accelerator.\n" +
			"    \"\"\"\n" +
			"    return " + strings.ReplaceAll(DeviceExpr, "\n", "\n    ") + "\n",
		Marker:  "def " + lazyDeviceFn + "(",
		Imports: []string{"import functools", "import torch"},
		Share:   lazyDeviceFn,
	}
}

// FirstUse is the default a library function's device parameter takes in
// place of an import-time one (see lazyDefault in transforms/device): a
// sentinel, so a caller passing None explicitly still passes None.
const FirstUse = "DEVICE_ON_FIRST_USE"

// FirstUsePrelude defines FirstUse (shared where the module is in a
// package).
func FirstUsePrelude() rule.Prelude {
	return rule.Prelude{
		Key: "00-device-first-use",
		Text: "class _DeviceOnFirstUse:\n" +
			"    \"\"\"pallasify: a default resolved on first use to pallasify_device().type.\"\"\"\n\n" +
			"    def __repr__(self):\n" +
			"        return \"<the device found on first use>\"\n\n\n" +
			FirstUse + " = _DeviceOnFirstUse()\n",
		Marker: FirstUse + " = ",
		Share:  FirstUse,
	}
}

// Library reports whether p's file is a library module (see Placement): the
// driver knows the file's tree (rule.Layout.Tree) and the file is none of an
// entry script, a test module or the helper module itself. Entry scripts are
// files with an `if __name__ == "__main__":` block, a module-level argparse
// parse, a module-level loop that trains (.backward() or .step()), or no
// function or class definition at all; test modules are test_*.py, *_test.py,
// conftest.py and files under a tests/ or test/ directory.
func Library(p *rule.Pass) bool {
	if !p.Layout.Tree {
		return false
	}
	return p.Memo("kit.library", func() any { return !entryScript(p) }).(bool)
}

func entryScript(p *rule.Pass) bool {
	base := path.Base(p.Path)
	switch {
	case base == rule.HelperModule+".py", base == "__main__.py", base == "setup.py", base == "conftest.py",
		strings.HasPrefix(base, "test_"), strings.HasSuffix(base, "_test.py"):
		return true
	}
	for _, dir := range strings.Split(path.Dir(p.Path), "/") {
		if dir == "tests" || dir == "test" {
			return true
		}
	}
	root := p.Tree.Root()
	defs := false
	for i := 0; i < int(root.NamedChildCount()); i++ {
		c := root.NamedChild(i)
		switch c.Type() {
		case "function_definition", "class_definition", "decorated_definition":
			defs = true
		case "if_statement":
			cond := p.Text(c.ChildByFieldName("condition"))
			if strings.Contains(cond, "__name__") && strings.Contains(cond, "__main__") {
				return true
			}
			if runsTraining(p, c) {
				return true
			}
		case "for_statement", "while_statement", "with_statement":
			if runsTraining(p, c) {
				return true
			}
		case "expression_statement":
			if t := p.Text(c); strings.Contains(t, ".parse_args(") || strings.Contains(t, ".parse_known_args(") {
				return true
			}
		}
	}
	return !defs
}

// runsTraining reports whether the module-level statement n calls
// .backward() or .step() (a training loop run on import).
func runsTraining(p *rule.Pass, n *ts.Node) bool {
	t := p.Text(n)
	return strings.Contains(t, ".backward(") || strings.Contains(t, ".step(")
}

// SharedPrelude marks a helper definition (a function named name) as shared
// where the module can import it from its package's helper module
// (HelperFrom); elsewhere it stays as it is.
func SharedPrelude(p *rule.Pass, pr rule.Prelude, name string) rule.Prelude {
	if from, helper := HelperFrom(p); from != "" {
		pr.Share, pr.From, pr.Helper = name, from, helper
	}
	return pr
}

// HelperFrom is the module prefix a module imports the shared definitions
// of a helper module from, and that module's path when it is not the
// module's own package's; from is "" where they stay inline:
//   - for a library module in a package directory, the relative prefix
//     (Layout.Package): it is imported as part of its package;
//   - else the absolute name ("dinov2.") of a package of the tree
//     (Layout.Tops) one of whose modules the module already imports by that
//     name at module level (importedTop): an entry script of the package
//     (`python dinov2/eval/knn.py` cannot import relatively, but it imports
//     dinov2 already), a module of a namespace directory inside it
//     (litgpt/eval/evaluate.py, no __init__.py), a loose script or test
//     importing the tree's package (timm's train.py, litgpt's tests): the
//     import can only fail where the module's own imports of that package
//     fail already;
//   - else "": an entry script, a namespace module, a loose script or test
//     that does not import a package of the tree by name (no import path to
//     a shared module works for every way it is run).
func HelperFrom(p *rule.Pass) (from, helper string) {
	if !p.Layout.Tree {
		return "", ""
	}
	r := p.Memo("kit.helperFrom", func() any {
		if Library(p) && p.Layout.Package != "" {
			return [2]string{p.Layout.Package, ""}
		}
		if top, ok := importedTop(p); ok {
			return [2]string{top.Name + ".", top.Helper}
		}
		return [2]string{"", ""}
	}).([2]string)
	return r[0], r[1]
}

// importedTop is the first of Layout.Tops by whose name the module imports
// one of that package's own modules (<name>.<child>, where Has(child)) at
// module level: an import that runs only in a function proves nothing
// about how the module itself is run.
func importedTop(p *rule.Pass) (rule.Top, bool) {
	var mods []string
	root := p.Tree.Root()
	for i := 0; i < int(root.NamedChildCount()); i++ {
		c := root.NamedChild(i)
		switch c.Type() {
		case "import_from_statement":
			if m := c.ChildByFieldName("module_name"); m != nil && m.Type() == "dotted_name" {
				mod := p.Text(m)
				for _, n := range ts.Children(c) {
					switch {
					case n.Equal(m):
					case n.Type() == "dotted_name":
						mods = append(mods, mod+"."+p.Text(n))
					case n.Type() == "aliased_import":
						mods = append(mods, mod+"."+p.Text(n.ChildByFieldName("name")))
					}
				}
				mods = append(mods, mod)
			}
		case "import_statement":
			for _, n := range ts.Children(c) {
				if n.Type() == "aliased_import" {
					n = n.ChildByFieldName("name")
				}
				mods = append(mods, p.Text(n))
			}
		}
	}
	for _, top := range p.Layout.Tops {
		for _, q := range mods {
			rest, ok := strings.CutPrefix(q, top.Name+".")
			child, _, _ := strings.Cut(rest, ".")
			if ok && top.Has != nil && top.Has(child) {
				return top, true
			}
		}
	}
	return rule.Top{}, false
}

// SharesHelpers reports whether an entry script's helpers are imported
// from its package's helper module: its DEVICE is then
// `DEVICE = pallasify_device()` (EntryDevicePrelude) and the helper texts
// name pallasify_device(), as in the helper module.
func SharesHelpers(p *rule.Pass) bool {
	from, _ := HelperFrom(p)
	return !Library(p) && from != ""
}

// EntryDevicePrelude is an entry script's DEVICE where it imports the
// package's pallasify_device (SharesHelpers): found once, when the script
// starts, as the inline definition was.
func EntryDevicePrelude(name string) rule.Prelude {
	return rule.Prelude{Key: "00-device", Text: name + " = " + LazyDevice + "\n", Marker: name + " = " + LazyDevice}
}

// importsShared reports whether the module imports name from its package's
// helper module (a definition of pallasify's own, as if inlined), relatively
// or by absolute name.
func importsShared(p *rule.Pass, name string) bool {
	return strings.HasSuffix(p.Imports.Names[name], rule.HelperModule+"."+name)
}

// OwnHelper reports whether the module's binding of name is pallasify's own
// helper: one of its texts (the current one, those earlier versions wrote)
// is in the module, or it is imported from the helper module.
func OwnHelper(p *rule.Pass, name string, texts ...string) bool {
	for _, text := range texts {
		if bytes.Contains(p.Src, []byte(strings.TrimSpace(text))) {
			return true
		}
	}
	return importsShared(p, name)
}
