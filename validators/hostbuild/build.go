package hostbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/pallasify/pallasify/transforms/safefs"
	"github.com/pallasify/pallasify/validators/emulator"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// Error codes of a *BuildError (documented in codes.go; the two the emulator
// also raises are its constants).
const (
	CodeUnsupported   = emulator.CodeUnsupported // a construct the emulator cannot run (Construct names it)
	CodeBuild         = "EMU-BUILD"              // g++ rejected the sources (first error, one line)
	CodeInclude       = emulator.CodeInclude     // a header neither the repository nor the shims provide
	CodeLaunch        = "EMU-LAUNCH"             // a <<<...>>> launch the rewriter could not read
	CodeRequest       = "EMU-REQUEST"            // the request itself is wrong (no sources, a missing file)
	CodeEnv           = "EMU-ENV"                // no usable torch / interpreter
	CodeRuntime       = "EMU-RUNTIME"            // the shared host runtime or prelude failed to build
	CodeLink          = "EMU-LINK"               // the link failed
	CodeMissingSymbol = "EMU-MISSING-SYMBOL"     // a declared symbol no source defines was called (the stub raises)
	CodeLimit         = "EMU-LIMIT"              // the sandbox stopped the build (time or memory); not cached
)

// BuildError is a coded, one-line reason a build failed.
type BuildError struct {
	Code      string `json:"code"`
	Construct string `json:"construct,omitempty"`
	File      string `json:"file,omitempty"` // repository-relative
	Line      int    `json:"line,omitempty"`
	Message   string `json:"message"`
}

func (e *BuildError) Error() string {
	loc := ""
	if e.File != "" {
		loc = fmt.Sprintf(" (%s:%d)", e.File, e.Line)
	}
	if e.Construct != "" {
		return fmt.Sprintf("%s: %s%s: %s", e.Code, e.Construct, loc, e.Message)
	}
	return fmt.Sprintf("%s%s: %s", e.Code, loc, e.Message)
}

// BuildRequest names an extension as the repository builds it.
type BuildRequest struct {
	Root        string            // repository root (read-only; its sources are copied)
	Module      string            // the module name Python imports ("mmcv._ext", load_inline's name=)
	Sources     []string          // repository-relative .cpp/.cc/.cu files
	Inline      *InlineSources    // load_inline sources (Root may then be empty)
	IncludeDirs []string          // repository-relative -I directories
	Defines     map[string]string // -D macros (value "" defines it as 1)
	Flags       []string          // extra compiler flags (extra_cflags); only -D/-U/-I/-std-free flags are honoured
	Python      string            // the interpreter whose torch to use (default $PALLASIFY_PYTHON, else python3)
}

// InlineSources are torch.utils.cpp_extension.load_inline's arguments.
type InlineSources struct {
	Name      string   `json:"name"`
	CPP       []string `json:"cpp_sources"`
	CUDA      []string `json:"cuda_sources"`
	Functions []string `json:"functions"`
}

// Built is a CPU-built extension module.
type Built struct {
	SO       string       `json:"so"`     // the module's shared library
	Module   string       `json:"module"` // its import name
	Key      string       `json:"key"`    // content hash
	Cached   bool         `json:"-"`
	Log      string       `json:"log,omitempty"`
	Runtime  string       `json:"runtime"` // the host runtime directory (libpallasify_hostrt.so)
	Kernels  []string     `json:"kernels"` // __global__ functions of the build's files
	Launches []LaunchSite `json:"launches"`
	Missing  []string     `json:"missing,omitempty"` // symbols declared but defined by no source (stubs that raise)
	// InlineDigest identifies load_inline sources (see InlineDigest).
	InlineDigest string `json:"inline_digest,omitempty"`
}

// builderVersion is part of every build key: bump it when the rewrite,
// the refusal checks or the compile and link steps change, so cached builds
// and refusals made by older code are not reused.
const builderVersion = "hostbuild/v2"

var sourceExt = map[string]bool{".cpp": true, ".cc": true, ".cxx": true, ".c": true, ".cu": true, ".cuh": true, ".h": true,
	".hpp": true, ".hh": true, ".hxx": true, ".inl": true, ".inc": true, ".tcc": true, ".ipp": true}

// InlineDigest is the identity of load_inline sources: the Python runtime
// (pyrt/pallasify_hostrt.inline_digest) computes the same to pick the
// prebuilt module.
func InlineDigest(in *InlineSources) string {
	s := sha256.Sum256([]byte(strings.Join([]string{in.Name, strings.Join(in.CPP, "\x01"), strings.Join(in.CUDA, "\x01"), strings.Join(in.Functions, "\x01")}, "\x00")))
	return hex.EncodeToString(s[:])
}

// inlineFiles renders load_inline's sources as torch does: main.cpp with
// the C++ sources and the bindings of the listed functions, cuda.cu with the
// CUDA sources.
func inlineFiles(in *InlineSources) map[string]string {
	var cpp strings.Builder
	cpp.WriteString("#include <torch/extension.h>\n")
	for _, s := range in.CPP {
		cpp.WriteString(s)
		cpp.WriteString("\n")
	}
	if len(in.Functions) > 0 {
		cpp.WriteString("\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n")
		for _, f := range in.Functions {
			fmt.Fprintf(&cpp, "m.def(%q, torch::wrap_pybind_function(%s), %q);\n", f, f, f)
		}
		cpp.WriteString("}\n")
	}
	files := map[string]string{"main.cpp": cpp.String()}
	if len(in.CUDA) > 0 {
		files["cuda.cu"] = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n" + strings.Join(in.CUDA, "\n") + "\n"
	}
	return files
}

// Build compiles the extension for the CPU (see the package doc). It is
// cached by content hash: a second call with the same inputs does no work.
func Build(ctx context.Context, sb *sandbox.Sandbox, cacheDir string, req BuildRequest) (*Built, error) {
	if req.Module == "" {
		return nil, &BuildError{Code: CodeRequest, Message: "no module name"}
	}
	files, tus, err := collect(req)
	if err != nil {
		return nil, err
	}
	cacheDir, err = filepath.Abs(cacheDir)
	if err != nil {
		return nil, err
	}
	t, err := ProbeTorch(ctx, sb, cacheDir, req.Python)
	if err != nil {
		return nil, err
	}
	rt, err := EnsureRuntime(ctx, sb, cacheDir, t)
	if err != nil {
		return nil, err
	}
	key := buildKey(rt, req, files)
	outDir := filepath.Join(cacheDir, "ext-"+key)
	if b, err := os.ReadFile(filepath.Join(outDir, "built.json")); err == nil {
		var bt Built
		if json.Unmarshal(b, &bt) == nil && fileExists(bt.SO) {
			bt.Cached = true
			return &bt, nil
		}
	}
	if b, err := os.ReadFile(filepath.Join(outDir, "refused.json")); err == nil {
		var be BuildError
		if json.Unmarshal(b, &be) == nil && be.Code != "" {
			return nil, &be
		}
	}
	bt, err := compile(ctx, sb, rt, req, files, tus, outDir, key)
	var be *BuildError
	if errors.As(err, &be) && be.Code != CodeEnv && be.Code != CodeRuntime && be.Code != CodeLimit && ctx.Err() == nil {
		// A refusal is as much a result as a module: cache it too.
		_ = os.MkdirAll(outDir, 0o755)
		b, _ := json.Marshal(be)
		_ = os.WriteFile(filepath.Join(outDir, "refused.json"), b, 0o644)
	}
	return bt, err
}

// collect returns the build's files (repository-relative path → contents:
// every C/C++/CUDA file under Root, or the load_inline files) and its
// translation units.
func collect(req BuildRequest) (map[string]string, []string, error) {
	files := map[string]string{}
	var tus []string
	if req.Inline != nil {
		for name, src := range inlineFiles(req.Inline) {
			files[name] = src
			tus = append(tus, name)
		}
		sort.Strings(tus)
		return files, tus, nil
	}
	if req.Root == "" || len(req.Sources) == 0 {
		return nil, nil, &BuildError{Code: CodeRequest, Message: "no sources: give Root and Sources, or Inline"}
	}
	err := filepath.WalkDir(req.Root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != req.Root && (strings.HasPrefix(n, ".") || n == "build" || n == "__pycache__" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !sourceExt[strings.ToLower(filepath.Ext(p))] || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(req.Root, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		return nil, nil, &BuildError{Code: CodeRequest, Message: err.Error()}
	}
	for _, s := range req.Sources {
		s = filepath.ToSlash(filepath.Clean(s))
		if _, ok := files[s]; !ok {
			return nil, nil, &BuildError{Code: CodeRequest, File: s, Message: "source file not found under the root"}
		}
		tus = append(tus, s)
	}
	return files, tus, nil
}

func buildKey(rt *Runtime, req BuildRequest, files map[string]string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s rt=%s module=%s\n", builderVersion, rt.Key, req.Module)
	meta, _ := json.Marshal([]any{req.Sources, req.IncludeDirs, req.Defines, req.Flags, req.Inline})
	h.Write(meta)
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "\n%s\x00%d\x00", n, len(files[n]))
		h.Write([]byte(files[n]))
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

var includeLine = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]`)

// closure returns the files the translation units include (transitively)
// from the build's files, resolving quoted and angle includes against the
// including file's directory, the include dirs and the root.
func closure(files map[string]string, tus, incDirs []string) []string {
	seen := map[string]bool{}
	var order []string
	var visit func(string)
	visit = func(f string) {
		if seen[f] {
			return
		}
		seen[f] = true
		order = append(order, f)
		for _, m := range includeLine.FindAllStringSubmatch(files[f], -1) {
			name := m[2]
			cands := []string{}
			if m[1] == `"` {
				cands = append(cands, pathJoin(pathDir(f), name))
			}
			for _, d := range incDirs {
				cands = append(cands, pathJoin(d, name))
			}
			cands = append(cands, pathJoin(".", name))
			for _, c := range cands {
				if _, ok := files[c]; ok {
					visit(c)
					break
				}
			}
		}
	}
	for _, t := range tus {
		visit(t)
	}
	return order
}

func pathDir(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[:i]
	}
	return "."
}

func pathJoin(d, n string) string { return filepath.ToSlash(filepath.Clean(filepath.Join(d, n))) }

func compile(ctx context.Context, sb *sandbox.Sandbox, rt *Runtime, req BuildRequest, files map[string]string, tus []string, outDir, key string) (*Built, error) {
	incDirs := make([]string, 0, len(req.IncludeDirs))
	for _, d := range req.IncludeDirs {
		incDirs = append(incDirs, filepath.ToSlash(filepath.Clean(d)))
	}
	used := closure(files, tus, incDirs)
	// Refuse what the emulator cannot run, before g++ sees it.
	table := KernelTable{}
	for _, f := range used {
		table.Add(f, files[f])
	}
	prepared := map[string]string{}
	var launches []LaunchSite
	for _, f := range used {
		out, probs := emulator.PrepareHost(files[f])
		for _, p := range probs {
			if p.Severity == "error" {
				return nil, &BuildError{Code: CodeUnsupported, Construct: p.Construct, File: f, Line: p.Line, Message: p.Message}
			}
		}
		rw, sites, err := RewriteLaunches(out, table)
		if err != nil {
			return nil, &BuildError{Code: CodeLaunch, File: f, Message: err.Error()}
		}
		for i := range sites {
			sites[i].File = f
		}
		launches = append(launches, sites...)
		prepared[f] = rw
	}
	work, err := os.MkdirTemp(filepath.Dir(outDir), "ext-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	// The sources' names come from the repository: each is written inside
	// work/src or not at all (a name with .. or through a link is refused).
	if err := os.Mkdir(filepath.Join(work, "src"), 0o755); err != nil {
		return nil, err
	}
	srcTree, err := safefs.OpenTree(filepath.Join(work, "src"))
	if err != nil {
		return nil, err
	}
	defer srcTree.Close()
	for name, src := range files {
		if p, ok := prepared[name]; ok {
			src = p
		}
		if err := srcTree.WriteBytes(name, []byte(src), 0o644); err != nil {
			return nil, err
		}
	}
	base := req.Module
	if i := strings.LastIndex(base, "."); i >= 0 {
		base = base[i+1:]
	}
	flags := append([]string{}, rt.cxxFlags()...)
	flags = append(flags, "-Winvalid-pch", "-include", filepath.Join(rt.Dir, "cudaemu_host.h"), "-DTORCH_EXTENSION_NAME="+base)
	for _, d := range incDirs {
		flags = append(flags, "-I"+filepath.Join(work, "src", d))
	}
	flags = append(flags, "-I"+filepath.Join(work, "src"))
	var defs []string
	for k := range req.Defines {
		defs = append(defs, k)
	}
	sort.Strings(defs)
	for _, k := range defs {
		if v := req.Defines[k]; v != "" {
			flags = append(flags, "-D"+k+"="+v)
		} else {
			flags = append(flags, "-D"+k)
		}
	}
	for _, f := range req.Flags {
		if strings.HasPrefix(f, "-D") || strings.HasPrefix(f, "-U") {
			flags = append(flags, f)
		}
	}
	// One script compiles the translation units two at a time and runs the
	// link check, which names symbols no source defines; each gets a stub
	// that raises when called (a repository's binding file often declares
	// more ops than its subset of sources builds). A second links.
	var sh strings.Builder
	sh.WriteString("set -u\nmkdir -p obj\nfail=0\n")
	var objs []string
	for i, tu := range tus {
		obj := fmt.Sprintf("obj/%d.o", i)
		objs = append(objs, obj)
		argv := append([]string{"g++"}, flags...)
		argv = append(argv, "-x", "c++", "-c", filepath.Join("src", filepath.FromSlash(tu)), "-o", obj)
		fmt.Fprintf(&sh, "( %s > obj/%d.log 2>&1 || echo %s > obj/%d.failed ) &\n", shellJoin(argv), i, shellQuote(tu), i)
		if i%2 == 1 {
			sh.WriteString("wait\n")
		}
	}
	sh.WriteString("wait\nif ls obj/*.failed >/dev/null 2>&1; then exit 3; fi\n")
	check := append([]string{"g++", "-shared", "-o", "check.so"}, objs...)
	check = append(check, rt.torchLibs()...)
	if rt.Torch.PyLib != "" && rt.Torch.PyLibDir != "" {
		check = append(check, "-L"+rt.Torch.PyLibDir, "-l"+rt.Torch.PyLib)
	}
	check = append(check, "-Wl,--no-undefined", "-Wl,--no-demangle")
	fmt.Fprintf(&sh, "%s > link-check.log 2>&1 || true\n", shellJoin(check))
	if err := os.WriteFile(filepath.Join(work, "build.sh"), []byte(sh.String()), 0o644); err != nil {
		return nil, err
	}
	sbx := withPaths(sb, sandboxEnv(), rt.Dir)
	// A translation unit takes 15-60 s on a loaded machine: the limits grow
	// with the number of them.
	per := time.Duration(len(tus)) * 2 * time.Minute
	lim := sandbox.Limits{CPUSeconds: 1200 + 120*len(tus), MemoryMB: 16384, FileMB: 1024, Wall: 10*time.Minute + per}
	out, runErr := sbx.Run(ctx, work, lim, "/bin/sh", "build.sh")
	if runErr != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, diagnose(work, tus, string(out), runErr)
	}
	checkLog, _ := os.ReadFile(filepath.Join(work, "link-check.log"))
	missing := undefinedSymbols(string(checkLog))
	if err := os.WriteFile(filepath.Join(work, "stubs.cc"), []byte(stubSource(missing)), 0o644); err != nil {
		return nil, err
	}
	link := append([]string{"g++", "-shared", "-o", base + ".so"}, objs...)
	link = append(link, "obj/stubs.o")
	link = append(link, rt.torchLibs()...)
	script := "g++ -std=c++17 -O1 -fPIC -c stubs.cc -o obj/stubs.o > stubs.log 2>&1 || exit 4\n" + shellJoin(link) + " > link.log 2>&1 || exit 5\n"
	if out, err := sbx.Run(ctx, work, lim, "/bin/sh", "-c", script); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, diagnose(work, tus, string(out), err)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	so := filepath.Join(outDir, base+".so")
	if err := copyFile(filepath.Join(work, base+".so"), so); err != nil {
		return nil, err
	}
	var kernels []string
	for k := range table {
		kernels = append(kernels, k)
	}
	sort.Strings(kernels)
	bt := &Built{SO: so, Module: req.Module, Key: key, Runtime: rt.Dir, Kernels: kernels, Launches: launches, Missing: missing}
	if req.Inline != nil {
		bt.InlineDigest = InlineDigest(req.Inline)
	}
	var logs []string
	for i := range tus {
		if b, err := os.ReadFile(filepath.Join(work, "obj", fmt.Sprintf("%d.log", i))); err == nil && len(b) > 0 {
			logs = append(logs, emulator.TrimLog(string(b)))
		}
	}
	bt.Log = strings.Join(logs, "\n")
	b, _ := json.MarshalIndent(bt, "", " ")
	if err := os.WriteFile(filepath.Join(outDir, "built.json"), b, 0o644); err != nil {
		return nil, err
	}
	return bt, nil
}

var (
	errLine     = regexp.MustCompile(`^(?:src/)?([^:\s]+):(\d+):(?:\d+:)? (?:fatal )?error: (.*)$`)
	unsupported = regexp.MustCompile(`cudaemu: unsupported construct: ([^"]+)`)
	quotedName  = regexp.MustCompile(`‘([^’]+)’|'([^']+)'`)
	noFile      = regexp.MustCompile(`^(.*): No such file or directory`)
)

// diagnose turns the build script's failure into one coded line.
func diagnose(work string, tus []string, out string, runErr error) error {
	if strings.Contains(runErr.Error(), "killed") {
		return &BuildError{Code: CodeLimit, Message: "the sandbox stopped the build: " + runErr.Error()}
	}
	for i, tu := range tus {
		if !fileExists(filepath.Join(work, "obj", fmt.Sprintf("%d.failed", i))) {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(work, "obj", fmt.Sprintf("%d.log", i)))
		return compileError(tu, string(b))
	}
	for _, l := range []string{"stubs.log", "link.log"} {
		if b, err := os.ReadFile(filepath.Join(work, l)); err == nil && len(b) > 0 {
			return &BuildError{Code: CodeLink, Message: firstError(string(b), runErr)}
		}
	}
	return &BuildError{Code: CodeBuild, Message: firstError(out, runErr)}
}

// compileError reads g++'s first error: an emulator refusal
// (static_assert "cudaemu: unsupported construct: X"), a missing header, or
// the first error with the name it is about.
func compileError(tu, log string) *BuildError {
	var first *BuildError
	for _, l := range strings.Split(log, "\n") {
		m := errLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		file := strings.TrimPrefix(m[1], "src/")
		line := atoi(m[2])
		msg := m[3]
		if u := unsupported.FindStringSubmatch(l); u != nil {
			return &BuildError{Code: CodeUnsupported, Construct: strings.TrimSpace(u[1]), File: file, Line: line, Message: "the emulator cannot run it"}
		}
		if first != nil {
			continue
		}
		if f := noFile.FindStringSubmatch(msg); f != nil {
			first = &BuildError{Code: CodeInclude, Construct: "#include <" + f[1] + ">", File: file, Line: line, Message: "header not found in the repository or the emulator's shims"}
			continue
		}
		be := &BuildError{Code: CodeBuild, File: file, Line: line, Message: msg}
		if q := quotedName.FindStringSubmatch(msg); q != nil {
			be.Construct = q[1] + q[2]
		}
		first = be
	}
	if first != nil {
		return first
	}
	return &BuildError{Code: CodeBuild, File: tu, Message: firstError(log, nil)}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func firstError(log string, err error) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "error") || strings.Contains(l, "undefined reference") {
			return strings.TrimSpace(l)
		}
	}
	if err != nil {
		return err.Error() + ": " + lastLine(log)
	}
	return lastLine(log)
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

var undefinedRef = regexp.MustCompile("undefined reference to [`'‘]([^'’]+)['’]")

// undefinedSymbols lists the (mangled) symbols a link check reports missing.
func undefinedSymbols(log string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range undefinedRef.FindAllStringSubmatch(log, -1) {
		if !seen[m[1]] && identOrMangled.MatchString(m[1]) {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}

var identOrMangled = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.$]*$`)

// stubSource defines each missing symbol as a function that raises.
func stubSource(missing []string) string {
	var b strings.Builder
	b.WriteString("#include <stdexcept>\n")
	for i, m := range missing {
		fmt.Fprintf(&b, "extern \"C\" __attribute__((used, visibility(\"hidden\"))) void pallasify_missing_%d() { throw std::runtime_error(\"pallasify hostbuild: %s: %s is declared but no source of the build defines it\"); }\n", i, CodeMissingSymbol, m)
		fmt.Fprintf(&b, "asm(\".globl %s\\n.hidden %s\\n.set %s, pallasify_missing_%d\");\n", m, m, m, i)
	}
	return b.String()
}
