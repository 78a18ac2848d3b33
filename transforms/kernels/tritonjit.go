package kernels

import (
	"regexp"
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// A Triton kernel is a jit object however it is bound: a function under
// @triton.jit, or a plain function handed to triton.jit as a call
// (kern = triton.jit(fn), triton.jit(do_not_specialize=...)(fn),
// triton.autotune(...)(triton.jit(fn)), triton.jit(fn)[grid](...)). The
// kernel is the function; the names bound to its jit object are its
// bindings (transforms/triton links launches through them).

// reTritonJitImport: `from triton import ..., jit, ...` makes a bare jit(...)
// Triton's (numba and jax have a jit too).
var reTritonJitImport = regexp.MustCompile(`(?m)^[ \t]*from[ \t]+triton[ \t]+import[^\n]*\bjit\b`)

// TritonJitNames are the callee texts that are triton.jit in src.
func TritonJitNames(src []byte) []string {
	if reTritonJitImport.Match(src) {
		return []string{"triton.jit", "jit"}
	}
	return []string{"triton.jit"}
}

// TritonJitCall returns the function call n jits: triton.jit(fn) or
// triton.jit(<keywords>)(fn), with fn a plain name. jits are the callee
// texts that mean triton.jit in the file (TritonJitNames).
func TritonJitCall(n *ts.Node, src []byte, jits []string) (string, bool) {
	if n == nil || n.Type() != "call" {
		return "", false
	}
	f := n.ChildByFieldName("function")
	if f == nil {
		return "", false
	}
	switch f.Type() {
	case "identifier", "attribute":
		if !isJitName(ts.Text(f, src), jits) {
			return "", false
		}
	case "call": // triton.jit(do_not_specialize=[...])(fn)
		g := f.ChildByFieldName("function")
		if g == nil || !isJitName(ts.Text(g, src), jits) {
			return "", false
		}
		for _, a := range callArgs(f) {
			if a.Type() != "keyword_argument" {
				return "", false
			}
		}
	default:
		return "", false
	}
	args := callArgs(n)
	if len(args) != 1 || args[0].Type() != "identifier" {
		return "", false
	}
	return ts.Text(args[0], src), true
}

func isJitName(callee string, jits []string) bool {
	callee = strings.Join(strings.Fields(callee), "")
	for _, j := range jits {
		if callee == j {
			return true
		}
	}
	return false
}

// callArgs are the argument nodes of call n (no punctuation, no comments).
func callArgs(n *ts.Node) []*ts.Node {
	var out []*ts.Node
	for _, a := range ts.Children(n.ChildByFieldName("arguments")) {
		switch a.Type() {
		case "(", ")", ",", "comment":
		default:
			out = append(out, a)
		}
	}
	return out
}
