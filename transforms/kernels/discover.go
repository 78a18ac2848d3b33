package kernels

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pallasify/pallasify/transforms/repofs"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Origins of a kernel.
const (
	OriginCUFile        = "cu-file"
	OriginLoadInline    = "load_inline"
	OriginLoad          = "load"
	OriginCUDAExtension = "cuda-extension"
	OriginCuPy          = "cupy"
	OriginTriton        = "triton"
)

// Spec statuses.
const (
	SpecInferred  = "inferred"
	SpecUser      = "user"
	SpecNeedsSpec = "needs-spec"
)

// Problem codes (the PKN family, shared with the pipeline's diagnostics).
const (
	CodeFound       = "PKN001" // kernel found, handed to the kernel stages (info)
	CodeNeedsSpec   = "PKN002" // spec could not be inferred (warning)
	CodeUnsupported = "PKN003" // construct isolation/emulation cannot handle (warning)
	CodeBadSpec     = "PKN004" // bad user spec file (error)
	CodeParse       = "PKN005" // CUDA source does not parse cleanly / unreadable (warning)
	CodeUnresolved  = "PKN006" // a Python reference to CUDA source that cannot be resolved (warning)
	CodeInventory   = "PKN007" // Triton kernel: inventory only (info)
	CodeOutside     = "PKN008" // a source, header or spec file resolves outside the repository; not read (warning)
	CodeInternal    = "PKN900" // discovery failed on one file or kernel (error)
)

// Problem is one coded finding of discovery.
type Problem struct {
	Code     string `json:"code"`
	Severity string `json:"severity"` // error, warning, info
	Path     string `json:"path,omitempty"`
	Line     int    `json:"line,omitempty"`
	Kernel   string `json:"kernel,omitempty"` // kernel id
	Message  string `json:"message"`
}

// Kernel is one discovered kernel.
type Kernel struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Path   string `json:"path"` // repo-relative, slash-separated: the .cu file, or the .py holding the source
	Line   int    `json:"line"` // line of the __global__ keyword (def for Triton)
	Origin string `json:"origin"`
	Class  string `json:"class"`
	// SpecStatus is inferred, user or needs-spec; Reason says why needs-spec.
	SpecStatus string `json:"spec_status"`
	Reason     string `json:"reason,omitempty"`
	Spec       *Spec  `json:"spec,omitempty"`
	// SpecFile is the user spec file used, when SpecStatus is user.
	SpecFile string `json:"spec_file,omitempty"`
	// Unit is the isolated translation unit (nil for Triton).
	Unit *Unit `json:"unit,omitempty"`
	// Launches counts launch sites found in host code.
	Launches int `json:"launches"`
	// ReferencedBy lists Python files that build or load this source.
	ReferencedBy []string `json:"referenced_by,omitempty"`
	FastMath     bool     `json:"fast_math,omitempty"`
	// TemplateArgs used to instantiate a template kernel.
	TemplateArgs map[string]string `json:"template_args,omitempty"`
	// Specializes is set on an explicit specialisation (`template <>
	// __global__ void k<at::Half>(...)`): its template arguments. Only a
	// launch with exactly those arguments runs its body.
	Specializes []string `json:"specializes,omitempty"`
	// Specialized lists the template arguments (comma-joined) an explicit
	// specialisation of this template replaces: a launch with them runs the
	// specialisation's body, not this one.
	Specialized []string `json:"specialized,omitempty"`
	// Captured is what the capture stage recorded for this kernel (nil when
	// no test launched it).
	Captured *Capture `json:"-"`

	sig []kparam // the kernel's parameters, for validating user specs
	// launcher is what the host function at the first launch site that
	// passes every argument states about them (nil when none does).
	launcher *launcherSizes
}

// Inventory is every kernel found under a root, sorted by path then line.
type Inventory struct {
	Root    string    `json:"root"`
	Kernels []*Kernel `json:"kernels"`
	// Extensions are the build calls found in Python (load_inline, load,
	// CUDAExtension); FindExtensions adds pybind trees.
	Extensions []*Extension `json:"extensions,omitempty"`
}

// Lookup returns the kernel with id, or nil.
func (inv *Inventory) Lookup(id string) *Kernel {
	for _, k := range inv.Kernels {
		if k.ID == id {
			return k
		}
	}
	return nil
}

// KernelID is the stable id of a kernel: "k-" and 10 hex digits of
// sha256(path + "#" + name), path repo-relative with forward slashes.
func KernelID(relPath, name string) string {
	sum := sha256.Sum256([]byte(filepath.ToSlash(relPath) + "#" + name))
	return "k-" + hex.EncodeToString(sum[:])[:10]
}

// maxSource bounds the size of a source file discovery reads.
const maxSource = 4 << 20

// source is one CUDA text to analyse: a file or an inline string.
type source struct {
	path     string // repo-relative file holding it
	text     []byte
	lineBase int
	origin   string
	dir      string // directory for resolving #include "..."
	refBy    []string
	fastMath bool
	cupyName string
	launches []*pyLaunch // CuPy calls of this source's kernels
}

// discoverer holds the state of one Discover call.
type discoverer struct {
	ctx  context.Context
	root string
	// fs reads under root and nowhere else: discovery runs outside the
	// sandbox, so a file or include whose real path leaves the tree (a
	// symlink to a host file or directory) is not read (PKN008).
	fs      *repofs.Root
	p       *ts.Parser
	parsed  map[string]*cudaFile // headers by path
	probs   []Problem
	sources []*source
	// headerDirs are where an include that resolves neither beside its
	// file nor from the root is looked for (the extension builds pass every
	// header folder as -I); found caches the answers.
	headerDirs []string
	found      map[string]string
	outside    map[string]bool // file:line of the includes reported as outside
}

// Discover finds the kernels under root among files (repo-relative paths the
// caller's walk found; nil walks root with ListFiles). Problems never stop
// discovery; only a cancelled context does, returning what was found so far.
func Discover(ctx context.Context, root string, files []string) (*Inventory, []Problem) {
	return DiscoverScan(ctx, root, files, nil)
}

// DiscoverScan is Discover for a caller that has already read the files and
// knows which Python files hold one of PythonNeedles: a Python file for which
// scan returns false is skipped unread (Discover reads it only to find that
// out). A nil scan reads every Python file.
func DiscoverScan(ctx context.Context, root string, files []string, scan func(rel string) bool) (*Inventory, []Problem) {
	return DiscoverScanned(ctx, root, files, scan, nil)
}

// DiscoverScanned is DiscoverScan for a caller that has also scanned some
// Python files itself, from its own parse (ScanPythonTree): where scanned
// returns a result, discovery takes it instead of reading and parsing the
// file again. A nil scanned, or a nil result, leaves the file to discovery.
func DiscoverScanned(ctx context.Context, root string, files []string, scan func(rel string) bool, scanned func(rel string) *PythonScan) (*Inventory, []Problem) {
	inv := &Inventory{Root: root}
	rfs, err := repofs.Open(root)
	if err != nil {
		return inv, []Problem{{Code: CodeParse, Severity: "error", Message: err.Error()}}
	}
	defer rfs.Close()
	d := &discoverer{ctx: ctx, root: root, fs: rfs, p: ts.NewParser(ts.Cpp), parsed: map[string]*cudaFile{}}
	defer d.p.Close()
	if files == nil {
		var err error
		if files, err = ListFiles(root); err != nil {
			return inv, []Problem{{Code: CodeParse, Severity: "error", Message: err.Error()}}
		}
	}
	sorted := append([]string(nil), files...)
	sort.Strings(sorted)
	d.headerDirs, d.found = headerDirs(sorted), map[string]string{}
	byPath := map[string]*source{}
	var tritons []*Kernel
	// Python first: it refines origins of .cu files and adds inline sources.
	var pyFiles []string
	for _, rel := range sorted {
		if strings.HasSuffix(rel, ".py") && (scan == nil || scan(rel)) {
			pyFiles = append(pyFiles, filepath.ToSlash(rel))
		}
	}
	refs := map[string]*pyRef{}
	for _, res := range d.scanPython(pyFiles, scanned) {
		d.sources = append(d.sources, res.inline...)
		inv.Extensions = append(inv.Extensions, res.exts...)
		for _, r := range res.refs {
			if old, ok := refs[r.path]; ok {
				old.by = appendUniq(old.by, r.by...)
				old.fastMath = old.fastMath || r.fastMath
				continue
			}
			refs[r.path] = r
		}
		tritons = append(tritons, res.triton...)
	}
	for _, rel := range sorted {
		rel = filepath.ToSlash(rel)
		if strings.HasSuffix(rel, ".cu") || strings.HasSuffix(rel, ".cuh") {
			if _, ok := byPath[rel]; ok {
				continue
			}
			text, err := d.read(rel)
			if err != nil {
				d.probs = append(d.probs, Problem{Code: readCode(err, CodeParse), Severity: "warning", Path: rel, Message: readMessage(err)})
				continue
			}
			s := &source{path: rel, text: text, origin: OriginCUFile, dir: path.Dir(rel)}
			byPath[rel] = s
			d.sources = append(d.sources, s)
		}
	}
	refPaths := make([]string, 0, len(refs))
	for p := range refs {
		refPaths = append(refPaths, p)
	}
	sort.Strings(refPaths)
	for _, p := range refPaths {
		r := refs[p]
		s := byPath[p]
		if s == nil {
			text, err := d.read(p)
			if err != nil {
				d.probs = append(d.probs, Problem{Code: readCode(err, CodeUnresolved), Severity: "warning", Path: r.by[0], Line: r.line,
					Message: fmt.Sprintf("%s source %s: %s", r.origin, p, readMessage(err))})
				continue
			}
			s = &source{path: p, text: text, dir: path.Dir(p)}
			byPath[p] = s
			d.sources = append(d.sources, s)
		}
		s.origin = r.origin
		s.refBy = r.by
		s.fastMath = s.fastMath || r.fastMath
	}
	kernels := d.analyze()
	for _, k := range tritons {
		kernels = append(kernels, k)
		d.probs = append(d.probs, Problem{Code: CodeInventory, Severity: "info", Path: k.Path, Line: k.Line, Kernel: k.ID,
			Message: fmt.Sprintf("Triton kernel %s listed (inventory only: Triton kernels are not emulated)", k.Name)})
	}
	seen := map[string]bool{}
	for _, k := range kernels {
		if seen[k.ID] {
			continue
		}
		seen[k.ID] = true
		inv.Kernels = append(inv.Kernels, k)
	}
	linkSpecializations(inv.Kernels)
	sort.SliceStable(inv.Kernels, func(i, j int) bool {
		a, b := inv.Kernels[i], inv.Kernels[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Line < b.Line
	})
	sortProblems(d.probs)
	return inv, d.probs
}

func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Path != ps[j].Path {
			return ps[i].Path < ps[j].Path
		}
		return ps[i].Line < ps[j].Line
	})
}

// read reads a repo-relative file through the root boundary: a path whose
// real path leaves the root, or that is no regular file, is refused
// (repofs.ErrOutside, repofs.ErrNotRegular).
//
// A path that leaves the root by its own ".." (a reference to no file of
// the repository) is an unresolved reference (PKN006), not a refusal.
func (d *discoverer) read(rel string) ([]byte, error) {
	if escapes(rel) {
		return nil, fmt.Errorf("%s is outside the repository", rel)
	}
	b, err := d.fs.ReadFile(rel, maxSource)
	if err != nil {
		return nil, fmt.Errorf("read %w", err)
	}
	return b, nil
}

// exists reports whether rel names a regular file inside the root; err is
// set when it names one outside it (or a FIFO, a device).
func (d *discoverer) exists(rel string) (bool, error) {
	if escapes(rel) {
		return false, nil // names no file of the repository
	}
	st, err := d.fs.Stat(rel)
	switch {
	case refused(err):
		return false, err
	case err != nil || !st.Mode().IsRegular():
		return false, nil
	}
	return true, nil
}

// escapes reports whether rel leaves the root by its own "..", or is
// absolute: it names no file of the repository.
func escapes(rel string) bool {
	clean := path.Clean(filepath.ToSlash(rel))
	return clean == ".." || strings.HasPrefix(clean, "../") || path.IsAbs(clean)
}

// refused: err says the boundary refused a path (outside the root, or not
// a regular file).
func refused(err error) bool {
	return errors.Is(err, repofs.ErrOutside) || errors.Is(err, repofs.ErrNotRegular)
}

// readCode is the code of a failed read: PKN008 when the boundary refused
// the path, else def.
func readCode(err error, def string) string {
	if refused(err) {
		return CodeOutside
	}
	return def
}

// readMessage says why a read failed, and what discovery did about it.
func readMessage(err error) string {
	if refused(err) {
		return err.Error() + "; not read (discovery reads only regular files inside the repository)"
	}
	return err.Error()
}

// unitFiles is a parsed source with its includes flattened.
type unitFiles struct {
	src   *source
	file  *cudaFile
	items []*item
}

// analyze parses every CUDA source, isolates every kernel and infers specs.
func (d *discoverer) analyze() []*Kernel {
	var units []*unitFiles
	for _, s := range d.sources {
		if d.ctx.Err() != nil {
			break
		}
		f, err := parseCUDA(d.ctx, d.p, s.path, s.text, s.lineBase)
		if err != nil {
			d.probs = append(d.probs, Problem{Code: CodeParse, Severity: "warning", Path: s.path, Message: err.Error()})
			continue
		}
		if f.errors > 0 {
			line := 0
			if e := f.tree.FirstError(); e != nil {
				line = f.line(int(e.StartByte()))
			}
			d.probs = append(d.probs, Problem{Code: CodeParse, Severity: "warning", Path: s.path, Line: line,
				Message: fmt.Sprintf("CUDA source parses with %d error node(s) after masking; kernels near them may be missed", f.errors)})
		}
		u := &unitFiles{src: s, file: f}
		u.items = d.flatten(f, s.dir, map[string]bool{s.path: true}, 0)
		units = append(units, u)
	}
	defer func() {
		for _, u := range units {
			u.file.close()
		}
		for _, f := range d.parsed {
			f.close()
		}
	}()
	var sites []*launchSite
	for _, u := range units {
		sites = append(sites, findLaunches(u.file, u.items)...)
	}
	var out []*Kernel
	for _, u := range units {
		for _, it := range u.file.items {
			if it.kind != itemKernel || len(it.names) == 0 {
				continue
			}
			if d.ctx.Err() != nil {
				return out
			}
			if k := d.safeKernel(u, it, sites); k != nil {
				out = append(out, k)
			}
		}
	}
	return out
}

// flatten returns f's items with local includes spliced in.
func (d *discoverer) flatten(f *cudaFile, dir string, seen map[string]bool, depth int) []*item {
	var out []*item
	resolvedIf := map[string]bool{} // #if blocks whose first branch included a tree file
	for _, it := range f.items {
		if it.kind != itemInclude || it.system || depth > 8 {
			if it.elseOf == "" {
				out = append(out, it)
			}
			continue
		}
		if it.elseOf != "" && resolvedIf[it.elseOf] {
			continue
		}
		rel := ""
		for _, cand := range []string{path.Join(dir, it.include), path.Clean(it.include)} {
			ok, err := d.exists(cand)
			if err != nil {
				// The compiler would read the host file: the unit keeps the
				// #include line, the header's code stays out of it.
				d.outsideInclude(f, it, err)
				rel = "-"
				break
			}
			if ok {
				rel = cand
				break
			}
		}
		if rel == "-" {
			if it.elseOf == "" {
				out = append(out, it)
			}
			continue
		}
		if rel == "" {
			rel = d.headerByName(it.include)
		}
		if rel == "" {
			if it.elseOf == "" {
				out = append(out, it)
			}
			continue
		}
		if n := len(it.wrappers); n > 0 && it.elseOf == "" {
			resolvedIf[it.wrappers[n-1].key] = true
		}
		if seen[rel] {
			continue
		}
		seen[rel] = true
		hf := d.parsed[rel]
		if hf == nil {
			text, err := d.read(rel)
			if err != nil {
				continue
			}
			hf, err = parseCUDA(d.ctx, d.p, rel, text, 0)
			if err != nil {
				continue
			}
			d.parsed[rel] = hf
		}
		out = append(out, d.flatten(hf, path.Dir(rel), seen, depth+1)...)
	}
	return out
}

// outsideInclude reports a local #include of f that resolves outside the
// root, once per file and line.
func (d *discoverer) outsideInclude(f *cudaFile, it *item, err error) {
	line := f.line(it.start)
	key := fmt.Sprintf("%s:%d", f.path, line)
	if d.outside == nil {
		d.outside = map[string]bool{}
	}
	if d.outside[key] {
		return
	}
	d.outside[key] = true
	d.probs = append(d.probs, Problem{Code: CodeOutside, Severity: "warning", Path: f.path, Line: line,
		Message: fmt.Sprintf("#include %q: %s", it.include, readMessage(err))})
}

// headerDirs are the folders of the sources among files and every folder
// above them: where an extension build's -I flags point.
func headerDirs(files []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		for dir := path.Dir(filepath.ToSlash(f)); dir != "." && dir != "/" && !seen[dir]; dir = path.Dir(dir) {
			seen[dir] = true
			out = append(out, dir)
		}
	}
	sort.Strings(out)
	return out
}

// headerByName is the one file named inc under the tree's source folders
// (headerDirs), or "" when none or several are.
func (d *discoverer) headerByName(inc string) string {
	inc = path.Clean(filepath.ToSlash(inc))
	if strings.HasPrefix(inc, "../") || path.IsAbs(inc) {
		return ""
	}
	if p, ok := d.found[inc]; ok {
		return p
	}
	var found string
	for _, dir := range d.headerDirs {
		cand := path.Join(dir, inc)
		if ok, _ := d.exists(cand); !ok {
			continue
		}
		if found != "" {
			found = ""
			break
		}
		found = cand
	}
	d.found[inc] = found
	return found
}

// kernel isolates one __global__ function and finds its spec.
func (d *discoverer) kernel(u *unitFiles, it *item, sites []*launchSite) *Kernel {
	f := it.file
	name := it.names[0]
	line := kernelLine(it)
	k := &Kernel{ID: KernelID(u.src.path, name), Name: name, Path: u.src.path, Line: line, Origin: u.src.origin,
		ReferencedBy: u.src.refBy, FastMath: u.src.fastMath}
	if k.Origin == "" {
		k.Origin = OriginCUFile
	}
	d.probs = append(d.probs, Problem{Code: CodeFound, Severity: "info", Path: k.Path, Line: k.Line, Kernel: k.ID,
		Message: fmt.Sprintf("CUDA kernel %s (%s) found; handed to the kernel stages", name, k.Origin)})
	// launch sites: same file first, then others by name
	var mine []*launchSite
	for _, s := range sites {
		if s.name == name && s.file == f {
			mine = append(mine, s)
		}
	}
	for _, s := range sites {
		if s.name == name && s.file != f {
			mine = append(mine, s)
		}
	}
	k.Launches = len(mine)
	k.sig = kernelParams(f, it.node)
	for _, s := range mine {
		if k.launcher = launcherSizesAt(d.ctx, d.p, it, s); k.launcher != nil {
			break
		}
	}
	k.Specializes = specializationArgs(f, it)
	var targs []string
	reason := ""
	var spec *Spec
	closure := closureItems(it, u.items)
	ft := analyzeFeatures(it, closure)
	k.Class = classOf(ft)
	for _, s := range mine {
		inf := inferSpec(d.ctx, d.p, it, closure, s, ft)
		if targs == nil || inf.spec != nil {
			targs = inf.targs
		}
		if inf.spec != nil {
			spec = inf.spec
			break
		}
		if reason == "" {
			reason = inf.reason
		}
	}
	if spec == nil && u.src.origin == OriginCuPy {
		for _, l := range u.src.launches {
			if l.kernel != name {
				continue
			}
			k.Launches++
			inf := inferCuPy(it, closure, l, ft)
			if inf.spec != nil {
				spec, reason = inf.spec, ""
				break
			}
			if reason == "" || strings.HasPrefix(reason, "no launch") {
				reason = inf.reason
			}
		}
	}
	if it.template != nil && len(targs) == 0 {
		for _, tp := range templateParams(f, it.template) {
			v := tp.deflt
			if v == "" && tp.typed {
				v = "float"
			}
			if v == "" {
				v = "0"
				if reason == "" {
					reason = "template parameter " + tp.name + " has no value"
				}
			}
			targs = append(targs, v)
		}
	}
	k.Unit = isolate(it, u.items, targs)
	if n := tuErrors(d.ctx, d.p, k.Unit.Source); n > 0 {
		k.Unit.Unsupported = appendUniq(k.Unit.Unsupported, fmt.Sprintf("isolated translation unit parses with %d error node(s)", n))
	}
	for _, x := range k.Unit.Unsupported {
		d.probs = append(d.probs, Problem{Code: CodeUnsupported, Severity: "warning", Path: k.Path, Line: k.Line, Kernel: k.ID,
			Message: fmt.Sprintf("kernel %s: %s", name, x)})
	}
	if spec != nil {
		if len(targs) > 0 {
			k.TemplateArgs = spec.TemplateArgs
		}
		spec.ID = k.ID
		spec.Source = SpecSource{Path: k.Path, Line: k.Line, Origin: k.Origin}
		spec.FastMath = spec.FastMath || k.FastMath
	}
	// a user spec wins over inference
	if us, file, probs := LoadUserSpec(d.root, k); file != "" {
		d.probs = append(d.probs, probs...)
		if us != nil {
			k.Spec, k.SpecStatus, k.SpecFile = us, SpecUser, file
			k.instantiate(us.TemplateArgs) // the reference runs the instance the spec names
			if us.Class != "" {
				k.Class = us.Class
			}
			return k
		}
		if reason == "" && spec == nil {
			reason = "no launch site found in host code"
		}
		k.SpecStatus, k.Reason = SpecNeedsSpec, "user spec "+file+" is invalid"
		d.needsSpec(k)
		return k
	}
	if spec != nil {
		k.Spec, k.SpecStatus = spec, SpecInferred
		return k
	}
	if reason == "" {
		reason = "no launch site found in host code"
		if k.Origin == OriginCuPy {
			reason = "launched from Python (CuPy); write a spec file"
		}
	}
	k.SpecStatus, k.Reason = SpecNeedsSpec, reason
	d.needsSpec(k)
	return k
}

// specializationArgs are the template arguments of an explicit
// specialisation (`template <>` before `name<args>(...)`), nil otherwise.
func specializationArgs(f *cudaFile, it *item) []string {
	if it.template == nil || it.template.NamedChildCount() != 0 {
		return nil
	}
	d := findType(it.node.ChildByFieldName("declarator"), "template_function")
	if d == nil || d.ChildByFieldName("arguments") == nil {
		return nil
	}
	var args []string
	al := d.ChildByFieldName("arguments")
	for i := 0; i < int(al.NamedChildCount()); i++ {
		args = append(args, f.text(al.NamedChild(i)))
	}
	return args
}

// linkSpecializations tells each primary template which template arguments
// an explicit specialisation of the same name takes over.
func linkSpecializations(ks []*Kernel) {
	for _, s := range ks {
		if len(s.Specializes) == 0 {
			continue
		}
		for _, k := range ks {
			if k.Name == s.Name && len(k.Specializes) == 0 {
				k.Specialized = appendUniq(k.Specialized, targsKey(s.Specializes))
			}
		}
	}
}

// targsKey normalises template arguments for comparison: no spaces, and
// at::/c10:: spell the same types (at::Half is c10::Half).
func targsKey(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		a = strings.Join(strings.Fields(a), "")
		a = strings.TrimPrefix(strings.TrimPrefix(a, "at::"), "c10::")
		out[i] = a
	}
	return strings.Join(out, ",")
}

// RunsBody reports whether a launch with template arguments targs runs
// this kernel's body: an explicit specialisation runs only its own
// arguments, a primary template every argument no specialisation takes.
func (k *Kernel) RunsBody(targs []string) bool {
	if len(k.Specializes) > 0 {
		return targsKey(targs) == targsKey(k.Specializes)
	}
	return !contains(k.Specialized, targsKey(targs))
}

// safeKernel runs kernel, turning a failure of the analysis on unexpected
// code into a PKN900 problem instead of a crash of the run.
func (d *discoverer) safeKernel(u *unitFiles, it *item, sites []*launchSite) (k *Kernel) {
	defer func() {
		if r := recover(); r != nil {
			d.probs = append(d.probs, Problem{Code: CodeInternal, Severity: "error", Path: u.src.path, Line: it.file.line(it.start),
				Message: fmt.Sprintf("kernel analysis failed: %v; please report it with the file", r)})
			k = nil
		}
	}()
	return d.kernel(u, it, sites)
}

// scanPython scans the Python files on every core, each file with a
// discoverer of its own (the scan reads only root and ctx and adds
// problems), and returns their results in the order of files, with their
// problems added to d's in that order: as a scan one file after another
// would. Files after a cancellation give empty results. A file scanned
// returns a result for keeps that result (the same scan, on the caller's
// parse of the same text).
func (d *discoverer) scanPython(files []string, scanned func(rel string) *PythonScan) []pyResult {
	res := make([]pyResult, len(files))
	probs := make([][]Problem, len(files))
	var left []int // the files to read and scan here
	for i, rel := range files {
		if ps := scannedOf(scanned, rel); ps != nil {
			res[i], probs[i] = ps.res, ps.probs
			continue
		}
		left = append(left, i)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.NumCPU(), len(left)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			py := ts.NewParser(ts.Python)
			defer py.Close()
			for {
				k := int(next.Add(1) - 1)
				if k >= len(left) || d.ctx.Err() != nil {
					return
				}
				i := left[k]
				fd := &discoverer{ctx: d.ctx, root: d.root, fs: d.fs}
				res[i] = fd.safePython(py, files[i])
				probs[i] = fd.probs
			}
		}()
	}
	wg.Wait()
	for _, p := range probs {
		d.probs = append(d.probs, p...)
	}
	return res
}

func (d *discoverer) safePython(p *ts.Parser, rel string) pyResult {
	return d.safeScan(rel, func() pyResult { return d.python(p, rel) })
}

// safeScan runs one Python file's scan; a panic becomes a problem of the
// file and an empty result.
func (d *discoverer) safeScan(rel string, scan func() pyResult) (res pyResult) {
	defer func() {
		if r := recover(); r != nil {
			d.probs = append(d.probs, Problem{Code: CodeInternal, Severity: "error", Path: rel,
				Message: fmt.Sprintf("Python scan failed: %v; please report it with the file", r)})
			res = pyResult{}
		}
	}()
	return scan()
}

// scannedOf is scanned's result for rel, nil without one.
func scannedOf(scanned func(rel string) *PythonScan, rel string) *PythonScan {
	if scanned == nil {
		return nil
	}
	return scanned(rel)
}

func (d *discoverer) needsSpec(k *Kernel) {
	d.probs = append(d.probs, Problem{Code: CodeNeedsSpec, Severity: "warning", Path: k.Path, Line: k.Line, Kernel: k.ID,
		Message: fmt.Sprintf("kernel %s needs a spec: %s; write .pallasify/kernels/%s.yaml", k.Name, k.Reason, k.ID)})
}

// closureItems returns the device-side items the kernel needs (excluding it).
func closureItems(k *item, items []*item) []*item {
	u := isolateClosure(k, items)
	var out []*item
	for _, it := range items {
		if u[it] && it != k {
			out = append(out, it)
		}
	}
	return out
}

func isolateClosure(k *item, items []*item) map[*item]bool {
	defs := map[string][]*item{}
	for _, it := range items {
		if it != k && deviceUsable(it) {
			for _, nm := range it.names {
				defs[nm] = append(defs[nm], it)
			}
		}
	}
	need := map[*item]bool{k: true}
	queue := []*item{k}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		for r := range it.refs {
			for _, d := range defs[r] {
				if !need[d] {
					need[d] = true
					queue = append(queue, d)
				}
			}
		}
	}
	return need
}

// tuErrors masks and parses a translation unit and counts error nodes.
func tuErrors(ctx context.Context, p *ts.Parser, src string) int {
	m, _ := Mask([]byte(src))
	t, err := p.Parse(ctx, m)
	if err != nil {
		return 1
	}
	defer t.Close()
	return t.ErrorCount()
}

// Find discovers the tree under root (files as for Discover; nil walks root)
// and returns the kernel with id.
func Find(ctx context.Context, root, id string, files []string) (*Kernel, error) {
	if files == nil {
		var err error
		if files, err = ListFiles(root); err != nil {
			return nil, err
		}
	}
	inv, _ := Discover(ctx, root, files)
	if k := inv.Lookup(id); k != nil {
		return k, nil
	}
	return nil, fmt.Errorf("no kernel %s under %s", id, root)
}

// ListFiles walks root for files discovery looks at (.cu, .cuh, .py),
// skipping hidden directories, virtual environments and node_modules. The
// pipeline passes its own gitignore-aware list instead.
func ListFiles(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := de.Name()
		if de.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "venv" || name == "__pycache__") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".cu") || strings.HasSuffix(name, ".cuh") || strings.HasSuffix(name, ".py") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", root, err)
	}
	return out, nil
}
