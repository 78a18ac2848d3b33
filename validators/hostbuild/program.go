package hostbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/pallasify/pallasify/transforms/safefs"
	"github.com/pallasify/pallasify/validators/emulator"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// ProgramRequest names a standalone CUDA program: main() with cudaMalloc,
// cudaMemcpy and (usually) its own check of the results.
type ProgramRequest struct {
	Root        string
	Name        string   // executable name
	Sources     []string // repository-relative .cu/.cpp files
	IncludeDirs []string
	Defines     map[string]string
}

// Program is a standalone program built for the CPU.
type Program struct {
	Exe      string       `json:"exe"`
	Key      string       `json:"key"`
	Cached   bool         `json:"-"`
	Kernels  []string     `json:"kernels"`
	Launches []LaunchSite `json:"launches"`
}

// ProgramResult is one sandboxed run of a program.
type ProgramResult struct {
	ExitCode int
	Output   string
	Launches []Launch
}

// BuildProgram compiles a standalone program with the emulator prelude (no
// torch) and the host runtime linked in; cached by content hash.
func BuildProgram(ctx context.Context, sb *sandbox.Sandbox, cacheDir string, req ProgramRequest) (*Program, error) {
	if !identOrMangled.MatchString(req.Name) {
		return nil, &BuildError{Code: CodeRequest, Message: fmt.Sprintf("invalid program name %q", req.Name)}
	}
	files, tus, err := collect(BuildRequest{Root: req.Root, Module: req.Name, Sources: req.Sources})
	if err != nil {
		return nil, err
	}
	cacheDir, err = filepath.Abs(cacheDir)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	for _, f := range emulator.HostFilesDigest() {
		h.Write([]byte(f))
	}
	fmt.Fprintf(h, "program/v1 %s", req.Name)
	meta, _ := json.Marshal([]any{req.Sources, req.IncludeDirs, req.Defines})
	h.Write(meta)
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "\n%s\x00%d\x00%s", n, len(files[n]), files[n])
	}
	key := hex.EncodeToString(h.Sum(nil))[:24]
	outDir := filepath.Join(cacheDir, "prog-"+key)
	if b, err := os.ReadFile(filepath.Join(outDir, "program.json")); err == nil {
		var p Program
		if json.Unmarshal(b, &p) == nil && fileExists(p.Exe) {
			p.Cached = true
			return &p, nil
		}
	}
	incDirs := append([]string(nil), req.IncludeDirs...)
	used := closure(files, tus, incDirs)
	table := KernelTable{}
	for _, f := range used {
		table.Add(f, files[f])
	}
	var launches []LaunchSite
	prepared := map[string]string{}
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
	work, err := os.MkdirTemp(cacheDir, "prog-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	emu := filepath.Join(work, "emu")
	if err := emulator.WriteHostFiles(emu); err != nil {
		return nil, err
	}
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
	argv := []string{"g++", "-std=c++20", "-O1", "-fno-strict-aliasing", "-fwrapv", "-ffp-contract=off", "-fdiagnostics-color=never",
		"-fmax-errors=5", "-Iemu/include", "-Iemu", "-include", "emu/cudaemu_host.h"}
	for _, d := range incDirs {
		argv = append(argv, "-I"+filepath.Join("src", d))
	}
	argv = append(argv, "-Isrc")
	var defs []string
	for k := range req.Defines {
		defs = append(defs, k)
	}
	sort.Strings(defs)
	for _, k := range defs {
		if v := req.Defines[k]; v != "" {
			argv = append(argv, "-D"+k+"="+v)
		} else {
			argv = append(argv, "-D"+k)
		}
	}
	for _, tu := range tus {
		argv = append(argv, "-x", "c++", filepath.Join("src", filepath.FromSlash(tu)))
	}
	argv = append(argv, "-x", "c++", "emu/hostrt.cc", "-o", req.Name, "-rdynamic", "-lpthread", "-ldl")
	out, err := withPaths(sb, sandboxEnv()).Run(ctx, work, sandbox.Limits{CPUSeconds: 600, MemoryMB: 8192, FileMB: 512, Wall: 10 * time.Minute}, argv...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, compileError(tus[0], string(out))
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	exe := filepath.Join(outDir, req.Name)
	if err := copyFile(filepath.Join(work, req.Name), exe); err != nil {
		return nil, err
	}
	var kernels []string
	for k := range table {
		kernels = append(kernels, k)
	}
	sort.Strings(kernels)
	p := &Program{Exe: exe, Key: key, Kernels: kernels, Launches: launches}
	b, _ := json.MarshalIndent(p, "", " ")
	if err := os.WriteFile(filepath.Join(outDir, "program.json"), b, 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

// RunProgram runs a built program in the sandbox with capture on; the
// captures land in captureDir ("" records none).
func RunProgram(ctx context.Context, sb *sandbox.Sandbox, p *Program, args []string, captureDir string, maxPerKernel int, timeout time.Duration) (*ProgramResult, error) {
	work, err := os.MkdirTemp("", "hostbuild-prog-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	if maxPerKernel <= 0 {
		maxPerKernel = 4
	}
	env := sandboxEnv("PALLASIFY_CAPTURE_MAX="+strconv.Itoa(maxPerKernel), "CUDAEMU_TIMEOUT_S=120")
	capDir := filepath.Join(work, "capture")
	if captureDir != "" {
		env = append(env, "PALLASIFY_CAPTURE_DIR="+capDir)
	}
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	out, runErr := withPaths(sb, env, filepath.Dir(p.Exe)).Run(ctx, work, sandbox.Limits{CPUSeconds: int(timeout.Seconds()) + 30, MemoryMB: 8192, FileMB: 1024, Wall: timeout}, append([]string{p.Exe}, args...)...)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res := &ProgramResult{Output: tail(string(out), 8000)}
	if runErr != nil {
		res.ExitCode = -1
		if ee, ok := runErr.(interface{ ExitCode() int }); ok {
			res.ExitCode = ee.ExitCode()
		}
	}
	if captureDir != "" {
		if err := copyTree(capDir, captureDir); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		res.Launches, err = ReadCaptures(captureDir)
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}
