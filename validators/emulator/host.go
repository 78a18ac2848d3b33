package emulator

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// hostFiles are the host-build files (see host/cudaemu_host.h): the prelude,
// the torch-side names, the shared runtime and the shim include directory.
//
//go:embed host
var hostFiles embed.FS

// WriteHostFiles writes cudaemu.h and the host-build files into dir: the
// prelude and runtime at its top, the shim headers under dir/include.
func WriteHostFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, HeaderName), []byte(header), 0o644); err != nil {
		return err
	}
	return fs.WalkDir(hostFiles, "host", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "host"), "/")
		if rel == "" {
			return nil
		}
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := hostFiles.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

// HostFilesDigest lists every host-build file with its contents, sorted,
// for a content hash (a change to any of them invalidates cached builds).
func HostFilesDigest() []string {
	out := []string{HeaderName + "\x00" + header}
	_ = fs.WalkDir(hostFiles, "host", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := hostFiles.ReadFile(p)
		out = append(out, p+"\x00"+string(b))
		return nil
	})
	sort.Strings(out)
	return out
}

// ShimHeaders returns the include names the host build's shim directory
// supplies ("cuda_runtime.h", "ATen/cuda/CUDAContext.h", ...).
func ShimHeaders() map[string]bool {
	out := map[string]bool{}
	_ = fs.WalkDir(hostFiles, "host/include", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out[strings.TrimPrefix(p, "host/include/")] = true
		}
		return nil
	})
	return out
}

// torchCUDAHeader matches includes from ATen/c10's CUDA side; only the
// shimmed ones can be built for the CPU.
var torchCUDAHeader = regexp.MustCompile(`^(ATen/cuda|ATen/native/cuda|c10/cuda|THC|ATen/native/cuda)/`)

// hostOnly constructs are fine in a host build (the host side really runs):
// launches and the runtime API.
var hostOnly = map[string]bool{
	"kernel launch <<<...>>>": true,
	"host CUDA runtime API":   true,
	"clock64/clock (timing)":  true, // host timing is fine; device clock64 stays a compile-time refusal in cudaemu.h
}

// PrepareHost makes one file of a repository's extension compile in a host
// build (cudaemu_host.h force-included): `extern __shared__ T name[];` becomes
// a pointer to the launch's dynamic shared memory, `static __shared__` loses
// its `static`, and every construct the emulator cannot run is reported
// (error severity) with its line: inline PTX, textures, CUB/Thrust, grid
// sync, and includes of ATen/c10 CUDA headers that have no shim. Unlike
// Prepare, launches and runtime calls stay (the host code runs), and includes
// stay (the shim include directory answers them). Line numbers hold.
func PrepareHost(src string) (string, []Problem) {
	var probs []Problem
	shims := ShimHeaders()
	lines := strings.SplitAfter(src, "\n")
	for i, l := range lines {
		m := includeRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name := strings.TrimSpace(m[2])
		for _, u := range unsupportedHeaders {
			if u.re.MatchString(name) {
				probs = append(probs, Problem{Code: CodeUnsupported, Severity: "error", Line: i + 1, Construct: u.construct,
					Message: fmt.Sprintf("unsupported construct: %s (#include %s%s%s)", u.construct, m[1], name, closer(m[1]))})
				break
			}
		}
		if torchCUDAHeader.MatchString(name) && !shims[name] {
			probs = append(probs, Problem{Code: CodeUnsupported, Severity: "error", Line: i + 1, Construct: "#include <" + name + ">",
				Message: fmt.Sprintf("unsupported construct: #include <%s> (an ATen/c10 CUDA header the emulator has no shim for)", name)})
		}
	}
	out := strings.Join(lines, "")
	out = externShared.ReplaceAllStringFunc(out, func(s string) string {
		m := externShared.FindStringSubmatch(s)
		typ := strings.Join(strings.Fields(stripAttributes(m[1])), " ")
		if typ == "" {
			return s
		}
		return fmt.Sprintf("%s* const %s = reinterpret_cast<%s*>(::cudaemu::dyn_smem);", typ, m[2], typ) + strings.Repeat("\n", strings.Count(s, "\n"))
	})
	out = staticShared.ReplaceAllString(out, "__shared__")
	code := blankCommentsAndStrings(out)
	for _, u := range unsupportedConstructs {
		if hostOnly[u.construct] {
			continue
		}
		for _, loc := range u.re.FindAllStringIndex(code, -1) {
			probs = append(probs, Problem{Code: CodeUnsupported, Severity: "error", Line: 1 + strings.Count(code[:loc[0]], "\n"),
				Construct: u.construct, Message: fmt.Sprintf("unsupported construct: %s (%s): %s", u.construct, strings.TrimSpace(code[loc[0]:loc[1]]), u.why)})
		}
	}
	if loc := regexp.MustCompile(`extern\s+__shared__`).FindStringIndex(code); loc != nil {
		probs = append(probs, Problem{Code: CodeUnsupported, Severity: "error", Line: 1 + strings.Count(code[:loc[0]], "\n"),
			Construct: "extern __shared__", Message: "unsupported construct: an extern __shared__ declaration PrepareHost could not rewrite (expected `extern __shared__ T name[];`)"})
	}
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Line < probs[j].Line })
	return out, dedupe(probs)
}

// BlankCommentsAndStrings replaces comments and the contents of string and
// character literals with spaces, keeping offsets and newlines.
func BlankCommentsAndStrings(src string) string { return blankCommentsAndStrings(src) }
