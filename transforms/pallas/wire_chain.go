package pallas

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// Wiring follows a launch wherever the repository puts it. mmcv's layout is
// the model: the kernel is defined in a header (common/cuda/*_kernel.cuh),
// launched by a launcher in a .cu that includes it (pytorch/cuda/*_cuda.cu),
// the launcher is called by a CUDA implementation (cudabind.cpp) that a
// device registry records (REGISTER_DEVICE_IMPL(op_impl, CUDA, op_cuda)),
// the registry is dispatched from the op's implementation (op.cpp:
// DISPATCH_DEVICE_IMPL(op_impl, args...)), and a function forwarding to
// that one is bound for Python (pybind.cpp: m.def("op", &op, py::arg(...))).

// cppSource reports whether a tree file is C++ or CUDA host code wiring
// reads for launches, callers and bindings.
func cppSource(p string) bool {
	switch strings.ToLower(path.Ext(p)) {
	case ".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c++", ".hpp", ".h":
		return true
	}
	return false
}

// launchSource is the file that launches kernel k and its text: the
// kernel's own file when it holds a launch, else a C++/CUDA source of the
// tree that includes the kernel's header and launches it (the first in
// path order).
func launchSource(k *kernels.Kernel, read func(string) ([]byte, bool), srcFiles []string) (string, string, error) {
	own, ok := read(k.Path)
	if !ok {
		return "", "", fmt.Errorf("cannot read %s", k.Path)
	}
	launch := reLaunchOf(k.Name)
	if launch.Match(own) {
		return k.Path, string(own), nil
	}
	inc := regexp.MustCompile(`(?m)^[ \t]*#[ \t]*include[ \t]*["<](?:[^">]*/)?` + regexp.QuoteMeta(path.Base(k.Path)) + `[">]`)
	files := append([]string(nil), srcFiles...)
	sort.Strings(files)
	for _, f := range files {
		if f == k.Path || !cppSource(f) {
			continue
		}
		b, ok := read(f)
		if ok && inc.Match(b) && launch.Match(b) {
			return f, string(b), nil
		}
	}
	return "", "", fmt.Errorf("no launch of %s in %s or a source that includes it", k.Name, k.Path)
}

// reLaunchOf matches a launch of kernel name (name<<<, name<T><<<).
func reLaunchOf(name string) *regexp.Regexp {
	return regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\s*(?:<[^<>]*>)?\s*<<<`)
}

// maxForwarding bounds how many forwarding functions wiring climbs from
// the launcher to the bound one (mmcv: launcher, CUDA implementation,
// dispatching implementation, bound op).
const maxForwarding = 4

// boundHost climbs from host function h (which no binding names) through
// the functions of the tree's C++ sources that forward to it, breadth
// first, to the first one a binding names: a caller passing one argument
// per parameter, or a device registry's dispatch (REGISTER_DEVICE_IMPL(key,
// CUDA, h) makes a function that runs DISPATCH_DEVICE_IMPL(key, args...) a
// caller of h). Each step keeps the kernel arguments in the caller's terms.
// nil when no forwarding function within maxForwarding steps is bound.
func boundHost(h *hostFn, read func(string) ([]byte, bool), srcFiles []string) (*hostFn, binding) {
	var srcs []string
	for _, f := range srcFiles {
		if !cppSource(f) {
			continue
		}
		if b, ok := read(f); ok {
			srcs = append(srcs, string(b))
		}
	}
	seen := map[string]bool{h.name: true}
	level := []*hostFn{h}
	for range maxForwarding {
		var next []*hostFn
		for _, fn := range level {
			for _, c := range forwardersOf(fn, srcs) {
				if seen[c.name] {
					continue
				}
				seen[c.name] = true
				if b, ok := bindingIn(srcs, c.name); ok {
					return c, b
				}
				next = append(next, c)
			}
		}
		level = next
	}
	return nil, binding{}
}

// bindingIn is the first binding of host function name among srcs.
func bindingIn(srcs []string, name string) (binding, bool) {
	for _, s := range srcs {
		if !strings.Contains(s, name) {
			continue
		}
		if b, ok := bindingOf(s, name); ok {
			return b, true
		}
	}
	return binding{}, false
}

// forwardersOf is every function of srcs that calls fn directly or through
// a device registry that records fn.
func forwardersOf(fn *hostFn, srcs []string) []*hostFn {
	direct := regexp.MustCompile(`\b` + regexp.QuoteMeta(fn.name) + `\s*\(`)
	reReg := regexp.MustCompile(`\bREGISTER_DEVICE_IMPL\s*\(\s*(\w+)\s*,\s*CUDA\s*,\s*` + regexp.QuoteMeta(fn.name) + `\s*\)`)
	var keys []string
	for _, s := range srcs {
		for _, m := range reReg.FindAllStringSubmatch(s, -1) {
			keys = append(keys, m[1])
		}
	}
	var out []*hostFn
	for _, s := range srcs {
		if strings.Contains(s, fn.name) {
			out = append(out, fn.callersIn(s, direct, 0)...)
		}
		for _, key := range keys {
			dispatch := regexp.MustCompile(`\bDISPATCH_DEVICE_IMPL\s*\(\s*` + regexp.QuoteMeta(key) + `\s*,`)
			if dispatch.MatchString(s) {
				// the dispatch's first argument is the registry key
				out = append(out, fn.callersIn(s, dispatch, 1)...)
			}
		}
	}
	return out
}
