package triton

import (
	"context"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Launchers driven without the repository's tests: the unit is the
// launcher, the Python function around a kernel[grid](...) launch (or the
// torch.autograd.Function whose forward or backward reaches one), called
// under Triton's interpreter in the sandbox on inputs made from its own code
// (validators/harness/pallasify_harness/triton_drive.py: its signature,
// defaults, the shapes and literals its source reads, its asserts' messages
// as feedback). The launches it makes are recorded as the tests' are
// (CapturedLaunch: grid and constexprs as they were at the launch), so a
// constexpr computed at run time (BLOCK = triton.next_power_of_2(n)) has its
// value, and they make the kernel's spec the same way (CapturedSizes,
// SpecFromCapture).

// Drive codes: why a launcher gave its kernel no captured launch.
const (
	// CodeDriveImport: the launcher's module did not import in the sandbox.
	CodeDriveImport = "PTR008"
	// CodeDriveInputs: every input tried made the launcher raise.
	CodeDriveInputs = "PTR009"
	// CodeDriveLauncher: no launcher can be called from outside (a launch
	// at module level, in a nested function or a method of a class that is
	// no autograd.Function).
	CodeDriveLauncher = "PTR010"
	// CodeDriveNotLaunched: the launchers ran and never launched the kernel
	// (a branch the inputs did not take).
	CodeDriveNotLaunched = "PTR011"
	// CodeDriveRun: the drive itself did not run (no Python with torch and
	// triton, the sandbox refused, the time limit).
	CodeDriveRun = "PTR012"
)

func driveCodes() []CodeDoc {
	return []CodeDoc{
		{CodeDriveImport, "triton-drive-import", "The launcher's module does not import",
			"Without the repository's tests, pallasify calls each Triton launcher (the Python function that launches " +
				"the kernel) under Triton's interpreter in the sandbox. Its module raised on import there (a dependency " +
				"the environment lacks, CUDA work at import); the message gives the error. The kernel keeps its static " +
				"spec, if any. Before: `import mypkg.ops` raises; after: nothing changes, the kernel is not driven."},
		{CodeDriveInputs, "triton-drive-inputs", "No input the launcher accepts was found",
			"The launcher's inputs are made from its code: tensors for the parameters it reads as tensors (x.shape, " +
				"x.view(-1, N)), at the rank it unpacks, int64 indices for index-named ones, one of the strings it " +
				"compares a parameter with, eps-like floats, its defaults. When it raises, the failing line and the " +
				"message choose the next try (another rank, a column count that is a multiple of 128, half inputs, None " +
				"for an optional tensor), a bounded number of times. Every try raised; the message gives the last error. " +
				"Write a test that calls the op (the tests are preferred), or a spec file."},
		{CodeDriveLauncher, "triton-drive-launcher", "The launch is not in a function pallasify can call",
			"Only a module-level function or a module-level torch.autograd.Function (through apply, then backward) is " +
				"driven. A launch at module level, in a nested function or in a method of another class is not."},
		{CodeDriveNotLaunched, "triton-drive-not-launched", "The launchers ran but did not launch this kernel",
			"Every launcher that reaches the kernel ran on the inputs tried and returned without launching it: the " +
				"launch sits in a branch those inputs did not take (a size threshold, a flag). The message names the " +
				"launchers and the kernels they did launch."},
		{CodeDriveRun, "triton-drive-run", "The Triton launchers could not be driven",
			"Driving runs the tree's Python under Triton's interpreter in the sandbox with the Python that has torch and " +
				"triton ($PALLASIFY_PYTHON, else .venv, else python3). It did not run (no such Python, no sandbox, the " +
				"time limit); the message says why. --no-drive turns driving off."},
	}
}

// DrivePrefix starts the Test label of a launch made by driving a launcher
// ("pallasify drive pkg.ops.rms_norm(x: float32[5, 77], ...)").
const DrivePrefix = "pallasify drive "

// Launcher is one callable that reaches Triton launches: a module-level
// function, or a module-level autograd.Function (Class) driven through
// apply and backward.
type Launcher struct {
	Module   string `json:"module"`
	Function string `json:"function,omitempty"`
	Class    string `json:"class,omitempty"`
	// Path is the file defining it (not sent).
	Path string `json:"-"`
}

// Label is the launcher as Python names it: module.function or module.Class.
func (l Launcher) Label() string {
	if l.Class != "" {
		return l.Module + "." + l.Class
	}
	return l.Module + "." + l.Function
}

// LauncherPlan is what to drive for a set of kernels: each kernel's
// launchers (by kernel path and name: Kernel.Path + ":" + Kernel.Name), and
// the kernels no launcher reaches with why (CodeDriveLauncher).
type LauncherPlan struct {
	Launchers []Launcher
	ByKernel  map[string][]Launcher
	NoDriver  map[string]string
	// ImportRoots are the tree's directories the launchers' modules import
	// from; Packages the tree's top-level packages.
	ImportRoots, Packages []string
}

// PlanLaunchers finds the launchers of ks in files (the tree's Python files
// by slash path): the function around each launch, and the autograd.Function
// whose forward or backward reaches it.
func PlanLaunchers(inv *Inventory, ks []*Kernel, files map[string][]byte) *LauncherPlan {
	p := &LauncherPlan{ByKernel: map[string][]Launcher{}, NoDriver: map[string]string{}}
	seen := map[string]bool{}
	roots, pkgs := map[string]bool{}, map[string]bool{}
	tops := importedTops(files)
	add := func(key string, l Launcher) {
		for _, x := range p.ByKernel[key] {
			if x == l {
				return
			}
		}
		p.ByKernel[key] = append(p.ByKernel[key], l)
		if !seen[l.Label()] {
			seen[l.Label()] = true
			p.Launchers = append(p.Launchers, l)
		}
	}
	for _, k := range ks {
		key := k.Path + ":" + k.Name
		var why []string
		for _, l := range k.Launches {
			root, mod := moduleIn(l.Path, files, tops)
			roots[root] = true
			pkgs[strings.Split(mod, ".")[0]] = true
			if a, _ := inv.AutogradFor(l); a != nil {
				ar, amod := moduleIn(a.Path, files, tops)
				roots[ar] = true
				add(key, Launcher{Module: amod, Class: a.Class, Path: a.Path})
			}
			switch {
			case l.Wrapper == "":
				why = append(why, "the launch at "+l.Path+" is at module level")
			case l.Class != "":
				if a, _ := inv.AutogradFor(l); a == nil || a.Class != l.Class {
					why = append(why, "the launch at "+l.Path+" is in a method of "+l.Class)
				}
			default:
				add(key, Launcher{Module: mod, Function: l.Wrapper, Path: l.Path})
			}
		}
		if len(p.ByKernel[key]) == 0 {
			if len(why) == 0 {
				why = append(why, "no launch of "+k.Name)
			}
			p.NoDriver[key] = strings.Join(why, "; ")
		}
	}
	for r := range roots {
		p.ImportRoots = append(p.ImportRoots, r)
	}
	for k := range pkgs {
		if k != "" {
			p.Packages = append(p.Packages, k)
		}
	}
	sort.Strings(p.ImportRoots)
	sort.Strings(p.Packages)
	return p
}

// ModuleOf is the import root and dotted module of a Python file: its
// package is every directory above it that holds an __init__.py or whose
// name the tree's files import absolutely (a namespace package: import
// liger_kernel.ops.utils with no liger_kernel/__init__.py), the root the
// first one above those that is neither.
func ModuleOf(file string, files map[string][]byte) (root, module string) {
	return moduleIn(file, files, importedTops(files))
}

func moduleIn(file string, files map[string][]byte, tops map[string]bool) (root, module string) {
	parts := []string{strings.TrimSuffix(path.Base(file), ".py")}
	if parts[0] == "__init__" {
		parts = nil
	}
	dir := path.Dir(file)
	for dir != "." && dir != "/" {
		if _, ok := files[path.Join(dir, "__init__.py")]; !ok && !tops[path.Base(dir)] {
			break
		}
		parts = append([]string{path.Base(dir)}, parts...)
		dir = path.Dir(dir)
	}
	if dir == "." || dir == "/" {
		dir = ""
	}
	return dir, strings.Join(parts, ".")
}

var absImportRE = regexp.MustCompile(`(?m)^[ \t]*(?:from|import)[ \t]+([A-Za-z_]\w*)[.\s]`)

// importedTops are the top-level names the files import absolutely.
func importedTops(files map[string][]byte) map[string]bool {
	tops := map[string]bool{}
	for _, b := range files {
		for _, m := range absImportRE.FindAllSubmatch(b, -1) {
			tops[string(m[1])] = true
		}
	}
	return tops
}

// DriveRun asks for the launches the launchers make under the interpreter.
type DriveRun struct {
	// Files are the tree's Python files by slash path.
	Files                 map[string][]byte
	ImportRoots, Packages []string
	Launchers             []Launcher
	// MaxLaunches bounds the launches recorded per kernel (default 4);
	// Tries the calls per launcher until one runs (default 12).
	MaxLaunches, Tries int
	// PerCall bounds one call of a launcher; Wall the whole run.
	PerCall, Wall time.Duration
	Python        string
	NoSandbox     bool
}

// DrivenLauncher is how driving one launcher ended: "ok" with the kernels
// it launched, else a code (CodeDriveImport, CodeDriveInputs,
// CodeDriveLauncher) and the last error; Tries are the inputs tried.
type DrivenLauncher struct {
	Module   string      `json:"module"`
	Function string      `json:"function"`
	Class    string      `json:"class"`
	Status   string      `json:"status"`
	Code     string      `json:"code"`
	Error    string      `json:"error"`
	Launched []string    `json:"launched"`
	Tries    []DrivenTry `json:"tries"`
}

// DrivenTry is one call: the inputs, and the error it raised ("" ran).
type DrivenTry struct {
	Inputs string `json:"inputs"`
	Error  string `json:"error"`
}

// Label is the launcher as Python names it.
func (d DrivenLauncher) Label() string {
	return Launcher{Module: d.Module, Function: d.Function, Class: d.Class}.Label()
}

// DriveResult is what a DriveRun recorded (pallasify.triton-drive/v1).
type DriveResult struct {
	Launchers []DrivenLauncher `json:"launchers"`
	Launches  []CapturedLaunch `json:"launches"`
	Error     string           `json:"error"`
}

// Driver runs a DriveRun (validators.TritonDrive runs it in the sandbox).
// Digest names its version, for the cache.
type Driver interface {
	Drive(ctx context.Context, req DriveRun) (*DriveResult, error)
	Digest() string
}
