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
// __init__.py) and imported by each library module, or defined inline, at
// module level, in a library module that is in no package.

// PlacementDoc is the section of every rule page whose portable fix uses
// DEVICE (see Doc).
const PlacementDoc = "The example is an entry script (a file with `if __name__ == \"__main__\":`, a module-level " +
	"`parse_args()` or training loop, or no function or class definition), a test module (`test_*.py`, `conftest.py`, " +
	"`tests/`) or a notebook: there `DEVICE` is defined once, at module level, after the imports, and so are the " +
	"helpers (`device_at`, the memory helper). A library module of a migrated tree — any other `.py` file, imported " +
	"rather than run — must not look for the accelerator when it is imported (on CUDA that poisons fork), so there " +
	"`DEVICE` is `pallasify_device()`, a cached function that finds the device on its first call. In a package it and " +
	"the helpers are written once, into `_pallasify_device.py` next to the top `__init__.py`, and each library module " +
	"imports what it uses (`from .._pallasify_device import device_at`); a library module in no package defines them " +
	"inline. A parameter default of a library function becomes `DEVICE_ON_FIRST_USE`, a sentinel resolved in the body " +
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
// in a library module (see Placement); elsewhere it stays as it is.
func SharedPrelude(p *rule.Pass, pr rule.Prelude, name string) rule.Prelude {
	if Library(p) {
		pr.Share = name
	}
	return pr
}

// importsShared reports whether the module imports name from its package's
// helper module (a definition of pallasify's own, as if inlined).
func importsShared(p *rule.Pass, name string) bool {
	q := p.Imports.Names[name]
	return strings.HasPrefix(q, ".") && strings.HasSuffix(q, rule.HelperModule+"."+name)
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
