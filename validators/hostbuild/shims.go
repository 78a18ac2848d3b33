package hostbuild

import "path"

// Shims: what a repository's tests import but a checked-out subset of it (or
// the sandbox's Python) lacks. RunRequest.Shims names directories of them.

// PackageInit is the stand-in __init__.py of a package directory that a
// tree (a subset of a larger repository) holds without one: its __path__
// starts with the tree's own directory, so its modules import as they are;
// attribute lookup imports the package's submodules lazily to find a name
// ("from mmcv.ops import RoIAlign"); device probes named IS_<DEVICE>_AVAILABLE
// answer for CUDA what torch.cuda says and False for the others.
const PackageInit = `# pallasify capture shim: the tree holds this package without its __init__.py
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

// StandIns are minimal stand-ins for dependencies a repository's tests
// import and the sandbox's Python lacks, by top-level module, as files
// relative to the shim root (appended LAST to sys.path: a real package
// always wins). They define names only (decorators that return what they
// decorate, registries that register, weight initialisers that call
// torch.nn.init), never what an op computes. The one table: the capture
// stage (pipeline/shims.go) and this package's corpus test use it.
var StandIns = map[string]map[string]string{
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

// ShimFiles are the shim files for a tree: PackageInit for each of pkgDirs
// (package directories without an __init__.py, slash-separated) and the
// StandIns of each of deps.
func ShimFiles(pkgDirs, deps []string) map[string]string {
	out := map[string]string{}
	for _, d := range pkgDirs {
		out[path.Join(d, "__init__.py")] = PackageInit
	}
	for _, m := range deps {
		for p, body := range StandIns[m] {
			out[p] = body
		}
	}
	return out
}
