package kit

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// CUDAOnlyTestCode is the code of the cuda-only-test rule (cudaapi), which
// reports each CUDAOnlyGuard whose Test is set.
const CUDAOnlyTestCode = "PCU013"

// CUDAOnlyTestNote ends the message of a finding whose fix was dropped
// because it lies in a test kept CUDA-only.
const CUDAOnlyTestNote = "; left CUDA-only: the test runs only with CUDA GPUs (" + CUDAOnlyTestCode + ")"

// skipDecorators are the skip decorators whose condition a rule may rewrite
// (`pytest.mark.skipif(not torch.cuda.is_available(), ...)`,
// `unittest.skipUnless(...)`): the test is kept CUDA-only only where its
// body does CUDA-only work.
var skipDecorators = map[string]bool{"skipif": true, "skipIf": true, "skipUnless": true, "skip_if": true,
	"skip_unless": true}

// cudaWord reports whether a name asks for CUDA or GPUs: one of its
// snake_case words (or the whole, lower-cased) is cuda/gpu/gpus or starts so
// (min_cuda_gpus, require_torch_gpu, requires_cuda, multi_gpu, cuda).
func cudaWord(name string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '_' || r == '.' }) {
		if strings.HasPrefix(w, "cuda") || w == "gpu" || w == "gpus" || strings.HasPrefix(w, "multigpu") {
			return true
		}
	}
	return false
}

// testGuard judges a decorated test function or class (a name pytest and
// unittest collect: test*, Test*): it is kept CUDA-only, as a whole, when a
// decorator asks for CUDA GPUs by name (`@_RunIf(min_cuda_gpus=2)`,
// `@require_torch_gpu`, `@pytest.mark.cuda`: no rule gives such a condition
// a TPU meaning, so a TPU host skips the test before and after the
// migration, and a rewrite inside it would only be noise), or when a skip
// decorator's condition checks for CUDA and the body does CUDA-only work
// (judged as a guard's branch is).
func (j *guardJudge) testGuard(n *ts.Node) (CUDAOnlyGuard, bool) {
	p := j.p
	def := n.ChildByFieldName("definition")
	if def == nil {
		return CUDAOnlyGuard{}, false
	}
	name := def.ChildByFieldName("name")
	if name == nil || !strings.HasPrefix(strings.ToLower(p.Text(name)), "test") {
		return CUDAOnlyGuard{}, false
	}
	for _, d := range ts.Children(n) {
		if d.Type() != "decorator" || d.NamedChildCount() == 0 {
			continue
		}
		expr := d.NamedChild(0)
		fn, args := expr, (*ts.Node)(nil)
		if expr.Type() == "call" {
			fn, args = expr.ChildByFieldName("function"), expr.ChildByFieldName("arguments")
		}
		if fn == nil {
			continue
		}
		dotted := p.Dotted(fn)
		byName := cudaWord(dotted)
		if !byName && args != nil {
			for _, a := range ts.Children(args) {
				if a.Type() == "keyword_argument" {
					if k := a.ChildByFieldName("name"); k != nil && cudaWord(p.Text(k)) {
						byName = true
					}
				}
			}
		}
		g := CUDAOnlyGuard{Cond: d, Test: true}
		switch {
		case byName:
			g.What, g.Line = "its decorator `"+oneLine(p.Text(expr))+"` asks for CUDA GPUs", int(d.StartPoint().Row)+1
		case args != nil && skipDecorators[dotted[strings.LastIndexByte(dotted, '.')+1:]] && mentionsCUDA(p, args):
			body := def.ChildByFieldName("body")
			if body == nil {
				continue
			}
			jg, ok := j.judge(body, def, 0)
			if !ok {
				continue
			}
			g.What, g.Line, g.Via = jg.What, jg.Line, jg.Via
		default:
			continue
		}
		g.Ranges = [][2]int{{Start(d), End(d)}, {Start(n), End(n)}}
		return g, true
	}
	return CUDAOnlyGuard{}, false
}
