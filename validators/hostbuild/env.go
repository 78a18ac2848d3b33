package hostbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pallasify/pallasify/validators/emulator"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// Torch describes the torch wheel a build compiles and links against.
type Torch struct {
	Python    string   `json:"python"`
	Dir       string   `json:"dir"`      // site-packages/torch
	Includes  []string `json:"includes"` // torch/include, torch/include/torch/csrc/api/include
	LibDir    string   `json:"lib_dir"`
	Version   string   `json:"version"`
	CXX11ABI  bool     `json:"cxx11_abi"`
	PyInclude string   `json:"py_include"`
	PyLibDir  string   `json:"py_lib_dir"`
	PyLib     string   `json:"py_lib"` // e.g. python3.11 (for the link check)
}

const torchProbe = `import json, os, sysconfig, torch
d = os.path.dirname(torch.__file__)
lib = sysconfig.get_config_var("LDLIBRARY") or ""
name = lib[3:].split(".so")[0] if lib.startswith("lib") else ""
print(json.dumps({"dir": d, "includes": [os.path.join(d, "include"), os.path.join(d, "include", "torch", "csrc", "api", "include")],
  "lib_dir": os.path.join(d, "lib"), "version": torch.__version__, "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
  "py_include": sysconfig.get_paths()["include"], "py_lib_dir": sysconfig.get_config_var("LIBDIR") or "", "py_lib": name}))
`

// python returns the interpreter to use: p, $PALLASIFY_PYTHON, or python3.
func python(p string) string {
	if p != "" {
		return p
	}
	if e := os.Getenv("PALLASIFY_PYTHON"); e != "" {
		return e
	}
	return "python3"
}

// sandboxEnv is the environment of every sandboxed step: torch must not
// autoload device backends (torch_tpu would claim libtpu).
func sandboxEnv(extra ...string) []string {
	return append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "TORCH_DEVICE_BACKEND_AUTOLOAD=0",
		"PYTHONDONTWRITEBYTECODE=1", "OMP_NUM_THREADS=1"}, extra...)
}

// withPaths returns a sandbox configured like sb with env as its
// environment and paths exposed read-only.
func withPaths(sb *sandbox.Sandbox, env []string, paths ...string) *sandbox.Sandbox {
	return &sandbox.Sandbox{Disabled: sb.Disabled, Bwrap: sb.Bwrap, Env: env,
		ReadOnly: append(append([]string(nil), sb.ReadOnly...), paths...)}
}

// ProbeTorch asks the interpreter where its torch lives (cached in cacheDir
// per interpreter path).
func ProbeTorch(ctx context.Context, sb *sandbox.Sandbox, cacheDir, py string) (*Torch, error) {
	py = python(py)
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(py))
	cached := filepath.Join(cacheDir, "torch-"+hex.EncodeToString(sum[:8])+".json")
	if b, err := os.ReadFile(cached); err == nil {
		var t Torch
		if json.Unmarshal(b, &t) == nil && t.Dir != "" {
			return &t, nil
		}
	}
	work, err := os.MkdirTemp(cacheDir, "probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	out, err := withPaths(sb, sandboxEnv()).Run(ctx, work, sandbox.Limits{CPUSeconds: 120, Wall: 3 * time.Minute}, py, "-c", torchProbe)
	if err != nil {
		return nil, &BuildError{Code: CodeEnv, Message: fmt.Sprintf("torch probe with %s failed: %v: %s", py, err, lastLine(string(out)))}
	}
	var t Torch
	line := lastLine(string(out))
	if err := json.Unmarshal([]byte(line), &t); err != nil {
		return nil, &BuildError{Code: CodeEnv, Message: fmt.Sprintf("torch probe with %s printed no description: %s", py, line)}
	}
	t.Python = py
	b, _ := json.Marshal(t)
	_ = os.WriteFile(cached, b, 0o644)
	return &t, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Runtime is the per-torch, per-emulator-version part shared by every
// build: the emulator files, the shared host runtime and the precompiled
// prelude.
type Runtime struct {
	Dir   string // holds cudaemu_host.h(.gch), hostrt, include/
	Key   string
	Torch *Torch
}

// cxxFlags are the flags of every extension translation unit (the
// precompiled prelude is valid only for exactly these).
func (r *Runtime) cxxFlags() []string {
	abi := "0"
	if r.Torch.CXX11ABI {
		abi = "1"
	}
	f := []string{"-std=c++20", "-O1", "-fPIC", "-fno-strict-aliasing", "-fwrapv", "-ffp-contract=off",
		"-fdiagnostics-color=never", "-fmax-errors=5", "-D_GLIBCXX_USE_CXX11_ABI=" + abi,
		"-DCUDAEMU_HOST_TORCH", "-DTORCH_API_INCLUDE_EXTENSION_H", "-I" + filepath.Join(r.Dir, "include"), "-I" + r.Dir}
	for _, i := range r.Torch.Includes {
		f = append(f, "-I"+i)
	}
	return append(f, "-I"+r.Torch.PyInclude)
}

func (r *Runtime) torchLibs() []string {
	return []string{"-L" + r.Torch.LibDir, "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python", "-Wl,-rpath," + r.Torch.LibDir,
		"-L" + r.Dir, "-lpallasify_hostrt", "-Wl,-rpath," + r.Dir}
}

// EnsureRuntime builds (once per content hash) the host runtime library and
// the precompiled prelude into cacheDir/rt-<key>.
func EnsureRuntime(ctx context.Context, sb *sandbox.Sandbox, cacheDir string, t *Torch) (*Runtime, error) {
	h := sha256.New()
	for _, f := range emulator.HostFilesDigest() {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	fmt.Fprintf(h, "torch=%s abi=%v dir=%s py=%s", t.Version, t.CXX11ABI, t.Dir, t.PyInclude)
	key := hex.EncodeToString(h.Sum(nil))[:20]
	dir := filepath.Join(cacheDir, "rt-"+key)
	r := &Runtime{Dir: dir, Key: key, Torch: t}
	if fileExists(filepath.Join(dir, "ok")) {
		return r, nil
	}
	// One builder at a time (other processes share the cache): wait for the
	// lock, then look again.
	unlock, err := lockFile(ctx, filepath.Join(cacheDir, "rt-"+key+".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if fileExists(filepath.Join(dir, "ok")) {
		return r, nil
	}
	// Built in place (the precompiled prelude records its directory); "ok"
	// marks a finished build.
	_ = os.RemoveAll(dir)
	if err := emulator.WriteHostFiles(dir); err != nil {
		return nil, err
	}
	abi := "0"
	if t.CXX11ABI {
		abi = "1"
	}
	rtArgs := []string{"g++", "-std=c++17", "-O1", "-fPIC", "-shared", "-DPHR_TORCH", "-D_GLIBCXX_USE_CXX11_ABI=" + abi}
	for _, i := range t.Includes {
		rtArgs = append(rtArgs, "-I"+i)
	}
	rtArgs = append(rtArgs, "hostrt.cc", "-o", "libpallasify_hostrt.so", "-L"+t.LibDir, "-lc10", "-Wl,-rpath,"+t.LibDir)
	pch := append([]string{"g++"}, r.cxxFlags()...)
	pch = append(pch, "-x", "c++-header", "cudaemu_host.h", "-o", "cudaemu_host.h.gch")
	script := shellJoin(rtArgs) + " && " + shellJoin(pch)
	sbx := withPaths(sb, sandboxEnv(), cacheDir)
	out, err := sbx.Run(ctx, dir, sandbox.Limits{CPUSeconds: 900, MemoryMB: 8192, FileMB: 4096, Wall: 15 * time.Minute}, "/bin/sh", "-c", script)
	if err != nil {
		return nil, &BuildError{Code: CodeRuntime, Message: "host runtime build failed: " + firstError(string(out), err)}
	}
	if err := os.WriteFile(filepath.Join(dir, "ok"), []byte(key), 0o644); err != nil {
		return nil, err
	}
	return r, nil
}

// lockFile takes an exclusive flock on path, polling until ctx ends.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// shellJoin quotes argv for /bin/sh.
func shellJoin(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shellQuote(a))
	}
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '/' || r == '.' || r == '=' || r == ',' || r == ':' || r == '+' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
