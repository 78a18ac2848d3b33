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
	"github.com/pallasify/pallasify/transforms/repofs"
	"github.com/pallasify/pallasify/validators/hostbuild"
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
//     stand-in of the names tests and wrappers import from it
//     (hostbuild.StandIns, the one table):
//     decorators that return what they decorate, registries that register,
//     weight initialisers that call torch.nn.init.

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
	rfs, err := repofs.Open(root)
	if err != nil {
		return out
	}
	defer rfs.Close()
	for _, f := range append(append([]string(nil), ext.Wrappers...), tests...) {
		b, err := rfs.ReadFile(f, 8<<20) // inside the tree, or not at all
		if err != nil {
			continue
		}
		for _, m := range importStmtRE.FindAllStringSubmatch(string(b), -1) {
			mods = append(mods, m[1]+m[2])
		}
	}
	for _, m := range mods {
		parts := strings.Split(m, ".")
		if _, ok := hostbuild.StandIns[parts[0]]; ok && !isDir(parts[0]) {
			for p, body := range hostbuild.StandIns[parts[0]] {
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
				out[path.Join(rel, "__init__.py")] = hostbuild.PackageInit
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
	h.Write([]byte(hostbuild.PackageInit))
	mods := make([]string, 0, len(hostbuild.StandIns))
	for m := range hostbuild.StandIns {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	for _, m := range mods {
		files := make([]string, 0, len(hostbuild.StandIns[m]))
		for f := range hostbuild.StandIns[m] {
			files = append(files, f)
		}
		sort.Strings(files)
		for _, f := range files {
			fmt.Fprintf(h, "%s %d\n%s", f, len(hostbuild.StandIns[m][f]), hostbuild.StandIns[m][f])
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
