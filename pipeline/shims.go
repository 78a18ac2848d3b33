package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// Shims let a repository's tests import what a checked-out subset of it
// lacks, without changing what any op computes. They are appended to
// sys.path (last: a real package always wins) for the capture runs only:
//
//   - a package directory of the tree without its __init__.py (a subset of a
//     larger repository: mmcv/ops, mmcv/utils) gets a stand-in __init__ whose
//     __path__ starts with the tree's own directory, so its modules import as
//     they are, and whose attribute lookup imports the package's submodules
//     lazily to find a name ("from mmcv.ops import RoIAlign"); device probes
//     named IS_<DEVICE>_AVAILABLE answer for CUDA what torch.cuda says (the
//     CPU build runs CUDA code) and False for the others;
//   - a well-known dependency the sandbox's Python lacks gets a minimal
//     stand-in of the names tests and wrappers import from it (standIns):
//     decorators that return what they decorate, registries that register,
//     weight initialisers that call torch.nn.init.

// packageInit is the stand-in __init__.py of a package directory that has
// none in the tree.
const packageInit = `# pallasify capture shim: the tree holds this package without its __init__.py
import importlib as _importlib
import os as _os
import pkgutil as _pkgutil
import sys as _sys

_here = _os.path.dirname(_os.path.abspath(__file__))
_parent, _, _leaf = __name__.rpartition(".")
_bases = _sys.modules[_parent].__path__ if _parent else [p or _os.getcwd() for p in _sys.path]
__path__ = [d for d in (_os.path.join(b, _leaf) for b in _bases) if _os.path.isdir(d) and _os.path.abspath(d) != _here] + [_here]


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    for info in _pkgutil.iter_modules(__path__):
        try:
            mod = _importlib.import_module(__name__ + "." + info.name)
        except Exception:  # noqa: BLE001 - a module that does not import here has nothing to give
            continue
        if hasattr(mod, name):
            # importing mod.<name> bound the submodule itself as this package's
            # attribute: bind what the package's real __init__ would export (the
            # function three_interpolate, not the module three_interpolate)
            value = getattr(mod, name)
            globals()[name] = value
            return value
    if name.startswith("IS_") and name.endswith("_AVAILABLE"):
        if name == "IS_CUDA_AVAILABLE":
            import torch

            return torch.cuda.is_available()
        return False
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
`

// standIns are minimal stand-ins for dependencies a repository's tests
// import, by top-level module, as files relative to the shim root.
var standIns = map[string]map[string]string{
	"mmengine": {
		"mmengine/__init__.py": "# pallasify capture shim: a stand-in for the names mmcv ops import from mmengine\n",
		"mmengine/utils/__init__.py": `import functools


def deprecated_api_warning(name_dict, cls_name=None):
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            for old, new in name_dict.items():
                if old in kwargs:
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)
        return inner
    return wrap


def digit_version(v):
    """The version's numeric parts ("2.15.0+cu132" -> (2, 15, 0)), for version gates."""
    parts = []
    for p in str(v).split("+")[0].split("."):
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)
`,
		"mmengine/registry/__init__.py": `class Registry:
    def __init__(self, name):
        self.name, self._modules = name, {}

    def register_module(self, name=None, force=False, module=None):
        def reg(cls):
            self._modules[name or cls.__name__] = cls
            return cls
        return reg(module) if module is not None else reg

    def get(self, key):
        return self._modules.get(key)


MODELS = Registry("model")
`,
		"mmengine/model/__init__.py": `import torch.nn as nn


def normal_init(module, mean=0, std=1, bias=0):
    nn.init.normal_(module.weight, mean, std)
    if getattr(module, "bias", None) is not None:
        nn.init.constant_(module.bias, bias)


def xavier_init(module, gain=1, bias=0, distribution="normal"):
    if distribution == "uniform":
        nn.init.xavier_uniform_(module.weight, gain=gain)
    else:
        nn.init.xavier_normal_(module.weight, gain=gain)
    if getattr(module, "bias", None) is not None:
        nn.init.constant_(module.bias, bias)


def constant_init(module, val, bias=0):
    nn.init.constant_(module.weight, val)
    if getattr(module, "bias", None) is not None:
        nn.init.constant_(module.bias, bias)


def kaiming_init(module, a=0, mode="fan_out", nonlinearity="relu", bias=0, distribution="normal"):
    if distribution == "uniform":
        nn.init.kaiming_uniform_(module.weight, a=a, mode=mode, nonlinearity=nonlinearity)
    else:
        nn.init.kaiming_normal_(module.weight, a=a, mode=mode, nonlinearity=nonlinearity)
    if getattr(module, "bias", None) is not None:
        nn.init.constant_(module.bias, bias)
`,
	},
}

var importStmtRE = regexp.MustCompile(`(?m)^\s*(?:from\s+([A-Za-z_][\w.]*)\s+import\b|import\s+([A-Za-z_][\w.]*))`)

// shimFiles are the shim files the entries of an extension need: stand-in
// __init__ files for the tree's package directories without one that the
// wrappers or tests import, and stand-ins for missing dependencies.
func shimFiles(root string, files []string, ext *kernels.Extension, tests []string) map[string]string {
	out := map[string]string{}
	isDir := func(rel string) bool {
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		return err == nil && st.IsDir()
	}
	hasInit := func(rel string) bool {
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel), "__init__.py"))
		return err == nil
	}
	var mods []string
	for _, w := range ext.Wrappers {
		mods = append(mods, strings.ReplaceAll(strings.TrimSuffix(w, ".py"), "/", "."))
	}
	for _, f := range append(append([]string(nil), ext.Wrappers...), tests...) {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			continue
		}
		for _, m := range importStmtRE.FindAllStringSubmatch(string(b), -1) {
			mods = append(mods, m[1]+m[2])
		}
	}
	for _, m := range mods {
		parts := strings.Split(m, ".")
		if _, ok := standIns[parts[0]]; ok && !isDir(parts[0]) {
			for p, body := range standIns[parts[0]] {
				out[p] = body
			}
			continue
		}
		for i := 1; i <= len(parts); i++ {
			rel := strings.Join(parts[:i], "/")
			if !isDir(rel) {
				break
			}
			if !hasInit(rel) {
				out[path.Join(rel, "__init__.py")] = packageInit
			}
		}
	}
	return out
}

// writeShims writes shim files into a directory named by their content hash
// under dir and returns it ("" when there are none).
func writeShims(dir string, files map[string]string) (string, error) {
	if len(files) == 0 {
		return "", nil
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s %d\n%s", n, len(files[n]), files[n])
	}
	// "shimsr-": the tree is world-readable (os.MkdirTemp makes 0700, and
	// the sandboxed run is another user: an unreadable shim dir made every
	// stand-in invisible). The prefix also keeps cached runs that used an
	// unreadable dir from being reused.
	out := filepath.Join(dir, "shimsr-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	tmp, err := os.MkdirTemp(dir, "shims.tmp")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	for _, n := range names {
		p := filepath.Join(tmp, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(files[n]), 0o644); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		os.RemoveAll(tmp)
		if _, err2 := os.Stat(out); err2 == nil {
			return out, nil
		}
		return "", err
	}
	return out, nil
}

// shimsDigest hashes the shim generator's texts (the stand-in __init__ and
// the dependency stand-ins), part of a capture's cache key.
func shimsDigest() string {
	h := sha256.New()
	h.Write([]byte(packageInit))
	mods := make([]string, 0, len(standIns))
	for m := range standIns {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	for _, m := range mods {
		files := make([]string, 0, len(standIns[m]))
		for f := range standIns[m] {
			files = append(files, f)
		}
		sort.Strings(files)
		for _, f := range files {
			fmt.Fprintf(h, "%s %d\n%s", f, len(standIns[m][f]), standIns[m][f])
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
