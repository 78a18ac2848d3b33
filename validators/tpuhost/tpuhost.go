// Package tpuhost runs a command on pallasify's simulated TPU host: a Python process where "tpu" is
// a device whose data and compute are on the CPU, every aten op reaching a tpu tensor is checked
// against TorchTPU's own registrations (the coverage table), and CUDA-only calls, custom CUDA ops,
// device mix-ups, compiles and jax_op kernels are recorded in a JSON report written at exit.
//
// The Python half lives in python/ (embedded here and written once to a cache directory by
// Install). The caller runs the command itself, usually in validators/sandbox: it adds Env's
// variables to the command's environment and the directory Install returned to the sandbox's
// ReadOnly paths, and gives the report a path the sandboxed process may write. See
// python/README.md for the runtime's contract and limits.
package tpuhost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

//go:embed python/sitecustomize.py python/pallasify_tpuhost/*.py python/README.md
var pyFiles embed.FS

// Options are the simulated host's settings for one run.
type Options struct {
	// Coverage is the coverage JSON (from Coverage). Empty: no op is checked (the report says so).
	Coverage string
	// Report is where the runtime writes its JSON report at exit. Empty: none is written.
	Report string
	// Devices is how many tpu devices torch.accelerator reports (default 1).
	Devices int
	// Precision is "highest" (default: float32 matmuls exact, as on the CPU) or "default"
	// (float32 matmul and convolution inputs rounded to bfloat16, as TorchTPU's default
	// Precision.DEFAULT runs them).
	Precision string
	// Fallback is "record" (default: an op without a TPU kernel is recorded and runs on the CPU, so
	// one run lists them all) or "raise" (it raises NotImplementedError, as TorchTPU 0.2.0 does
	// with its cpu fallback off, its default).
	Fallback string
	// AllOps records every aten op the command runs, on any device, with its coverage class
	// (Report.Ops): the table `pallasify ops` prints.
	AllOps bool
}

// Install writes the runtime's Python files under cacheDir (once per content) and returns the
// directory to put first on PYTHONPATH; it holds sitecustomize.py and the pallasify_tpuhost
// package, and must be readable by the command (a sandbox's ReadOnly path).
func Install(cacheDir string) (string, error) {
	h := sha256.New()
	var names []string
	err := fs.WalkDir(pyFiles, "python", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := pyFiles.ReadFile(p)
		if err != nil {
			return err
		}
		names = append(names, p)
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("tpuhost: %w", err)
	}
	dir := filepath.Join(cacheDir, "tpuhost-py-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "sitecustomize.py")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("tpuhost: %w", err)
	}
	tmp, err := os.MkdirTemp(cacheDir, ".tpuhost-py-")
	if err != nil {
		return "", fmt.Errorf("tpuhost: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, p := range names {
		b, err := pyFiles.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("tpuhost: %w", err)
		}
		dst := filepath.Join(tmp, filepath.FromSlash(strings.TrimPrefix(p, "python/")))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", fmt.Errorf("tpuhost: %w", err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return "", fmt.Errorf("tpuhost: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("tpuhost: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process installed the same content first.
		if _, serr := os.Stat(filepath.Join(dir, "sitecustomize.py")); serr == nil {
			return dir, nil
		}
		return "", fmt.Errorf("tpuhost: %w", err)
	}
	return dir, nil
}

// libtpuEnv keeps libtpu (imported by torch_tpu and by JAX) off the cloud metadata server.
var libtpuEnv = []string{"TPU_SKIP_MDS_QUERY=1", "TPU_WORKER_HOSTNAMES=localhost"}

var unsafeKey = regexp.MustCompile(`[^A-Za-z0-9._+-]+`)

// Coverage returns the path of TorchTPU's op-coverage JSON for python's installed torch and
// torch-tpu, computing it once per versions (python -m pallasify_tpuhost.coverage, in a process of
// its own: it imports torch_tpu) and caching it under cacheDir.
func Coverage(ctx context.Context, python, cacheDir string) (string, error) {
	pyDir, err := Install(cacheDir)
	if err != nil {
		return "", err
	}
	ver := exec.CommandContext(ctx, python, "-c",
		"import importlib.metadata as m; print(m.version('torch'), m.version('torch-tpu'))")
	ver.Env = cleanEnv(os.Environ())
	out, err := ver.Output()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(stderrOf(err)), "\n")
		return "", fmt.Errorf("tpuhost: torch and torch-tpu versions from %s: %w: %s", python, err, strings.TrimSpace(lines[len(lines)-1]))
	}
	fields := strings.Fields(string(out))
	if len(fields) != 2 {
		return "", fmt.Errorf("tpuhost: torch and torch-tpu versions from %s: got %q", python, out)
	}
	key := unsafeKey.ReplaceAllString(fmt.Sprintf("torch-%s_torch-tpu-%s_s%d", fields[0], fields[1], coverageSchema), "_")
	path := filepath.Join(cacheDir, "tpuhost-coverage-"+key+".json")
	if validCoverage(path) {
		// Readable by the sandboxed command, which may run as another user.
		return path, os.Chmod(path, 0o644)
	}
	tmp, err := os.CreateTemp(cacheDir, ".tpuhost-coverage-*.json")
	if err != nil {
		return "", fmt.Errorf("tpuhost: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.CommandContext(ctx, python, "-m", "pallasify_tpuhost.coverage", tmp.Name())
	env := cleanEnv(os.Environ())
	env = setEnv(env, "PYTHONPATH", pyDir)
	for _, kv := range libtpuEnv {
		k, v, _ := strings.Cut(kv, "=")
		env = setEnv(env, k, v)
	}
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("tpuhost: TorchTPU op coverage (%s -m pallasify_tpuhost.coverage): %w: %s",
			python, err, tail(stderr.String(), 2000))
	}
	if !validCoverage(tmp.Name()) {
		return "", fmt.Errorf("tpuhost: TorchTPU op coverage: %s wrote no usable JSON", python)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", fmt.Errorf("tpuhost: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("tpuhost: %w", err)
	}
	return path, nil
}

// coverageSchema is pallasify_tpuhost.COVERAGE_SCHEMA: the cache key changes with the JSON's shape.
const coverageSchema = 1

func validCoverage(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var c struct {
		Schema int               `json:"schema"`
		Ops    map[string]string `json:"ops"`
	}
	return json.Unmarshal(b, &c) == nil && c.Schema == coverageSchema && len(c.Ops) > 0
}

// Env is the environment variables that run a Python command on the simulated host, pythonDir
// (from Install) first on PYTHONPATH ahead of pythonPath (the command's own, may be empty).
func Env(pythonDir, pythonPath string, o Options) []string {
	pp := pythonDir
	if pythonPath != "" {
		pp += string(os.PathListSeparator) + pythonPath
	}
	devices := o.Devices
	if devices <= 0 {
		devices = 1
	}
	precision := o.Precision
	if precision == "" {
		precision = "highest"
	}
	fallback := o.Fallback
	if fallback == "" {
		fallback = "record"
	}
	env := []string{
		"PALLASIFY_TPUHOST=1",
		"PYTHONPATH=" + pp,
		"TORCH_DEVICE_BACKEND_AUTOLOAD=0",
		"JAX_PLATFORMS=cpu",
		"PALLASIFY_TPUHOST_DEVICES=" + strconv.Itoa(devices),
		"PALLASIFY_TPUHOST_PRECISION=" + precision,
		"PALLASIFY_TPUHOST_FALLBACK=" + fallback,
		"PALLASIFY_TPUHOST_COVERAGE=" + o.Coverage,
		"PALLASIFY_TPUHOST_REPORT=" + o.Report,
	}
	if o.AllOps {
		env = append(env, "PALLASIFY_TPUHOST_ALLOPS=1")
	}
	return append(env, libtpuEnv...)
}

// Prepare returns env (KEY=VALUE entries, e.g. os.Environ() or a sandbox's Env) with Env's
// variables set, replacing any earlier value; env's PYTHONPATH is kept after pythonDir.
func Prepare(env []string, pythonDir string, o Options) []string {
	out := append([]string(nil), env...)
	for _, kv := range Env(pythonDir, lookup(env, "PYTHONPATH"), o) {
		k, v, _ := strings.Cut(kv, "=")
		out = setEnv(out, k, v)
	}
	return out
}

// Report mirrors the runtime's JSON report (pallasify_tpuhost/report.py).
type Report struct {
	UnsupportedOps []UnsupportedOp `json:"unsupported_ops"`
	CUDAOnlyCalls  []CUDAOnlyCall  `json:"cuda_only_calls"`
	CustomCUDAOps  []CustomCUDAOp  `json:"custom_cuda_ops"`
	Compiles       []Compile       `json:"compiles"`
	DeviceMixups   []DeviceMixup   `json:"device_mixups"`
	JaxOps         []JaxOp         `json:"jax_ops"`
	// Ops is every aten op the command ran (Options.AllOps), with its coverage class.
	Ops     []UnsupportedOp `json:"ops,omitempty"`
	Devices int             `json:"devices"`
	// Precision is the run's mode: "highest" or "default".
	Precision string `json:"precision"`
	// Fallback is "record" or "raise".
	Fallback string `json:"fallback"`
	// Errors are the runtime's own problems (no coverage JSON, an unreadable one).
	Errors []string `json:"errors"`
	// Processes is how many Python processes' reports were merged (ReadReports).
	Processes int `json:"processes,omitempty"`
}

// UnsupportedOp is an aten op without a TPU kernel that reached a tpu tensor.
type UnsupportedOp struct {
	Op    string `json:"op"`
	Count int    `json:"count"`
	// Class is "fallback" (TorchTPU's backend fallback: raises by default, runs on the CPU when its
	// cpu fallback is on) or "unsupported" (nothing for the device at all).
	Class string `json:"class"`
	// Site is the first call site, "path:line" (relative to the working directory where under it);
	// empty when the op ran with no Python frame of the user's (the autograd engine's thread).
	Site string `json:"site"`
}

// CUDAOnlyCall is a CUDA-only API that failed as on a host without CUDA.
type CUDAOnlyCall struct {
	API   string `json:"api"`
	Count int    `json:"count"`
	Site  string `json:"site"`
	Error string `json:"error"`
}

// CustomCUDAOp is a custom CUDA op or extension function called with tpu tensors.
type CustomCUDAOp struct {
	Op    string `json:"op"`
	Count int    `json:"count"`
	Site  string `json:"site"`
}

// Compile is one torch.compile call.
type Compile struct {
	Backend string `json:"backend"`
	Dynamic any    `json:"dynamic"`
	Site    string `json:"site"`
}

// DeviceMixup is an op refused because a tpu tensor met a CPU tensor (or another tpu index).
type DeviceMixup struct {
	Op      string `json:"op"`
	Devices string `json:"devices"`
	Count   int    `json:"count"`
	Site    string `json:"site"`
	Error   string `json:"error"`
}

// JaxOp is a jax_op kernel that ran (through JAX on the CPU).
type JaxOp struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Findings is how many things the report names that would fail or differ on a real TPU host.
func (r *Report) Findings() int {
	return len(r.UnsupportedOps) + len(r.CUDAOnlyCalls) + len(r.CustomCUDAOps) + len(r.DeviceMixups)
}

// ReadReport reads a report the runtime wrote.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tpuhost: report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("tpuhost: report %s: %w", path, err)
	}
	return &r, nil
}

// ReadReports reads the reports in dir — one per Python process the command started, when
// Options.Report names a directory — and merges them: counts added, the first site kept, in the
// order the processes wrote them (by file name); a directory without any gives an empty report.
func ReadReports(dir string) (*Report, error) {
	names, err := filepath.Glob(filepath.Join(dir, "report-*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := &Report{}
	for _, n := range names {
		r, err := ReadReport(n)
		if err != nil {
			return nil, err
		}
		out.merge(r)
	}
	// Empty lists, not nulls, in the JSON the CLI prints.
	for _, l := range []*[]UnsupportedOp{&out.UnsupportedOps, &out.Ops} {
		if *l == nil {
			*l = []UnsupportedOp{}
		}
	}
	if out.CUDAOnlyCalls == nil {
		out.CUDAOnlyCalls = []CUDAOnlyCall{}
	}
	if out.CustomCUDAOps == nil {
		out.CustomCUDAOps = []CustomCUDAOp{}
	}
	if out.Compiles == nil {
		out.Compiles = []Compile{}
	}
	if out.DeviceMixups == nil {
		out.DeviceMixups = []DeviceMixup{}
	}
	if out.JaxOps == nil {
		out.JaxOps = []JaxOp{}
	}
	if out.Errors == nil {
		out.Errors = []string{}
	}
	return out, nil
}

// merge adds r's findings to m's.
func (m *Report) merge(r *Report) {
	m.UnsupportedOps = mergeBy(m.UnsupportedOps, r.UnsupportedOps, sameOp, addOp)
	m.Ops = mergeBy(m.Ops, r.Ops, sameOp, addOp)
	m.CUDAOnlyCalls = mergeBy(m.CUDAOnlyCalls, r.CUDAOnlyCalls, func(a, b CUDAOnlyCall) bool { return a.API == b.API && a.Site == b.Site },
		func(e *CUDAOnlyCall, o CUDAOnlyCall) { e.Count += o.Count })
	m.CustomCUDAOps = mergeBy(m.CustomCUDAOps, r.CustomCUDAOps, func(a, b CustomCUDAOp) bool { return a.Op == b.Op },
		func(e *CustomCUDAOp, o CustomCUDAOp) { e.Count += o.Count })
	m.DeviceMixups = mergeBy(m.DeviceMixups, r.DeviceMixups, func(a, b DeviceMixup) bool { return a.Op == b.Op && a.Site == b.Site },
		func(e *DeviceMixup, o DeviceMixup) { e.Count += o.Count })
	m.JaxOps = mergeBy(m.JaxOps, r.JaxOps, func(a, b JaxOp) bool { return a.Name == b.Name },
		func(e *JaxOp, o JaxOp) { e.Count += o.Count })
	m.Compiles = append(m.Compiles, r.Compiles...)
	m.Devices = max(m.Devices, r.Devices)
	if m.Precision == "" {
		m.Precision = r.Precision
	}
	if m.Fallback == "" {
		m.Fallback = r.Fallback
	}
	for _, e := range r.Errors {
		if !slices.Contains(m.Errors, e) {
			m.Errors = append(m.Errors, e)
		}
	}
	m.Processes++
}

func sameOp(a, b UnsupportedOp) bool { return a.Op == b.Op }

func addOp(e *UnsupportedOp, o UnsupportedOp) {
	e.Count += o.Count
	if e.Site == "" {
		e.Site = o.Site
	}
}

// mergeBy adds each of from to into: to the entry same as it (add), else
// appended.
func mergeBy[T any](into, from []T, same func(a, b T) bool, add func(*T, T)) []T {
	for _, o := range from {
		if i := slices.IndexFunc(into, func(e T) bool { return same(e, o) }); i >= 0 {
			add(&into[i], o)
		} else {
			into = append(into, o)
		}
	}
	return into
}

func lookup(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

func setEnv(env []string, key, value string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// cleanEnv drops the variables that would start the simulated host or skip torch_tpu's autoload
// in a process that reads TorchTPU's own registrations.
func cleanEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PALLASIFY_TPUHOST") || k == "TORCH_DEVICE_BACKEND_AUTOLOAD" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return ": " + tail(string(ee.Stderr), 2000)
	}
	return ""
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
