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

// hostConstruct is an if, else, for, while or switch of a host function
// body, open at the scan's position.
type hostConstruct struct {
	keyword      string
	at           int  // offset of its keyword in the scanned prefix
	paren, brace int  // depths where it started
	inCond       bool // in its parenthesised condition
	seenParen    bool
	braced       bool // its body is a { } block
	inBody       bool
}

var reHostKeyword = regexp.MustCompile(`^(?:if|else|for|while|switch|do)\b`)

// launchConstruct is the keyword of the if, else, loop or switch of a host
// function body whose scope the position at the end of prefix (the body
// from its opening brace up to a launch) is in, "" when it is in none: a
// launch that runs only under a host condition (psamask chooses one of two
// kernels by psa_type) or once per loop iteration is not the whole op, so
// wiring that replaces the op by it would not be faithful.
func launchConstruct(prefix string) string {
	return keywordOf(openConstructs(prefix))
}

// openConstructs are the constructs open at the end of prefix, outermost
// first (nil also for a comment left open: launchConstruct's "" then).
func openConstructs(prefix string) []*hostConstruct {
	var open []*hostConstruct
	paren, brace := 0, 0
	closeBraceless := func() {
		for len(open) > 0 {
			c := open[len(open)-1]
			if !c.inBody || c.braced || paren != c.paren || brace != c.brace {
				return
			}
			open = open[:len(open)-1]
		}
	}
	for i := 0; i < len(prefix); i++ {
		ch := prefix[i]
		switch {
		case strings.HasPrefix(prefix[i:], "//"):
			if j := strings.IndexByte(prefix[i:], '\n'); j >= 0 {
				i += j
				continue
			}
			return open
		case strings.HasPrefix(prefix[i:], "/*"):
			if j := strings.Index(prefix[i:], "*/"); j >= 0 {
				i += j + 1
				continue
			}
			return open
		case ch == '"' || ch == '\'':
			for i++; i < len(prefix) && prefix[i] != ch; i++ {
				if prefix[i] == '\\' {
					i++
				}
			}
			continue
		case isIdentStart(ch) && (i == 0 || !isIdentChar(prefix[i-1])):
			if m := reHostKeyword.FindString(prefix[i:]); m != "" {
				c := &hostConstruct{keyword: m, at: i, paren: paren, brace: brace}
				if m == "else" || m == "do" {
					c.inBody = true
				} else {
					c.inCond = true
				}
				open = append(open, c)
				i += len(m) - 1
				continue
			}
			for i+1 < len(prefix) && isIdentChar(prefix[i+1]) {
				i++
			}
			continue
		}
		top := func() *hostConstruct {
			if len(open) == 0 {
				return nil
			}
			return open[len(open)-1]
		}()
		switch ch {
		case '(':
			paren++
			if top != nil && top.inCond {
				top.seenParen = true
			}
		case ')':
			paren--
			if top != nil && top.inCond && top.seenParen && paren == top.paren {
				top.inCond, top.inBody = false, true
			}
		case '{':
			if top != nil && top.inBody && !top.braced && paren == top.paren && brace == top.brace {
				top.braced = true
			}
			brace++
		case '}':
			brace--
			for len(open) > 0 && open[len(open)-1].braced && brace == open[len(open)-1].brace {
				open = open[:len(open)-1]
				closeBraceless()
			}
		case ';':
			closeBraceless()
		}
	}
	return open
}

func keywordOf(open []*hostConstruct) string {
	if len(open) == 0 {
		return ""
	}
	return open[len(open)-1].keyword
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' }
