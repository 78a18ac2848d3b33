package kernels

import (
	"regexp"
	"strings"

	"github.com/pallasify/pallasify/transforms/ts"
)

// Kernel classes.
const (
	ClassElementwise  = "elementwise"
	ClassRowReduction = "row-reduction"
	ClassMatmulTile   = "matmul-tile"
	ClassTranspose    = "transpose"
	ClassScan         = "scan"
	ClassHistogram    = "histogram"
	ClassStencil      = "stencil"
	ClassOther        = "other"
)

// features are structural facts about a kernel and its device closure.
type features struct {
	shared, barrier, shuffle, shuffleUp, atomics bool
	dataAtomic                                   bool // an atomic into an array at a data-dependent index
	floatAtomic                                  bool
	threadIndex                                  bool
	scanLoop, reduceLoop, mac, tileSwap, stencil bool
	rowLoop                                      bool // for (j = threadIdx.x; j < n; j += blockDim.x)
}

var (
	reThreadIdx  = regexp.MustCompile(`\bthreadIdx\.[xyz]\b`)
	reGrowLoop   = regexp.MustCompile(`for\s*\([^;]*;[^;]*;\s*(\w+)\s*(<<=\s*1|\*=\s*2|=\s*\w+\s*\*\s*2|=\s*\w+\s*<<\s*1)\s*\)`)
	reShrinkLoop = regexp.MustCompile(`for\s*\([^;]*;[^;]*;\s*(\w+)\s*(>>=\s*1|/=\s*2|=\s*\w+\s*/\s*2|=\s*\w+\s*>>\s*1)\s*\)`)
	reRowLoop    = regexp.MustCompile(`for\s*\(\s*(int|unsigned|unsigned int|int64_t|size_t|auto)?\s*\w+\s*=\s*(threadIdx\.x|tid)\b[^;]*;[^;]*;\s*\w+\s*\+=\s*(blockDim\.x|bd|stride|\w+)\s*\)`)
)

// analyzeFeatures walks the kernel and its closure's device functions.
func analyzeFeatures(k *item, closure []*item) features {
	var ft features
	all := append([]*item{k}, closure...)
	for _, it := range all {
		f := it.file
		for _, m := range f.marks {
			if m.Start >= it.start && m.End <= it.end && m.Kind == "__shared__" {
				ft.shared = true
			}
		}
		body := string(f.masked[it.start:it.end])
		if it.kind == itemMacro {
			// a kernel-body macro (CUDA_1D_KERNEL_LOOP) the kernel uses
			// is part of its body once expanded
			body = macroBody(string(f.src[it.start:it.end]))
		} else if it.kind != itemKernel && it.kind != itemDevice {
			continue
		}
		ft.barrier = ft.barrier || strings.Contains(body, "__syncthreads") || strings.Contains(body, "__syncwarp")
		ft.shuffle = ft.shuffle || strings.Contains(body, "__shfl")
		ft.shuffleUp = ft.shuffleUp || strings.Contains(body, "__shfl_up")
		ft.threadIndex = ft.threadIndex || reThreadIdx.MatchString(body)
		ft.rowLoop = ft.rowLoop || reRowLoop.MatchString(body)
		for _, m := range reGrowLoop.FindAllStringSubmatch(body, -1) {
			if regexp.MustCompile(`-\s*` + regexp.QuoteMeta(m[1]) + `\b`).MatchString(body) {
				ft.scanLoop = true
			}
		}
		if reShrinkLoop.MatchString(body) {
			ft.reduceLoop = true
		}
		if it.kind != itemMacro {
			featuresOfTree(it, &ft)
		}
	}
	return ft
}

// macroBody is the replacement text of a #define, continuation lines
// joined.
func macroBody(def string) string {
	def = strings.ReplaceAll(def, "\\\n", " ")
	def = strings.ReplaceAll(def, "\\\r\n", " ")
	return def
}

func featuresOfTree(it *item, ft *features) {
	f := it.file
	src := f.masked
	type sub struct {
		array string
		idx   []string
	}
	var subs []sub
	ts.Walk(it.node, func(n *ts.Node) bool {
		switch n.Type() {
		case "call_expression":
			name := lastName(ts.Text(n.ChildByFieldName("function"), src))
			if atomicFns[name] {
				ft.atomics = true
				args := ts.Children(n.ChildByFieldName("arguments"))
				if len(args) > 0 {
					a := stripCasts(args[0], src)
					if a.Type() == "pointer_expression" {
						a = a.ChildByFieldName("argument")
					}
					if a != nil && a.Type() == "subscript_expression" {
						idx := strings.TrimSpace(strings.Trim(ts.Text(a.ChildByFieldName("indices"), src), "[]"))
						if !regexp.MustCompile(`^(\d+|blockIdx\.[xyz])$`).MatchString(idx) {
							ft.dataAtomic = true
						}
						arr := ts.Text(a.ChildByFieldName("argument"), src)
						if regexp.MustCompile(`\b(float|double|half|__half|__nv_bfloat16)\b[^;,)]*\b` + regexp.QuoteMeta(arr) + `\b`).Match(src[it.start:it.end]) {
							ft.floatAtomic = true
						}
					}
					if len(args) > 1 && strings.Contains(ts.Text(args[1], src), ".") && regexp.MustCompile(`\d\.\d*f?`).MatchString(ts.Text(args[1], src)) {
						ft.floatAtomic = true
					}
				}
			}
		case "assignment_expression":
			if ts.Text(n.Child(1), src) == "+=" {
				r := stripCasts(n.ChildByFieldName("right"), src)
				if r.Type() == "binary_expression" && ts.Text(r.Child(1), src) == "*" {
					l, rr := stripCasts(r.ChildByFieldName("left"), src), stripCasts(r.ChildByFieldName("right"), src)
					if isMatIndex(l, src) && isMatIndex(rr, src) && inFor(n) {
						ft.mac = true
					}
				}
			}
		case "subscript_expression":
			var idx []string
			cur := n
			for cur.Type() == "subscript_expression" {
				idx = append([]string{strings.TrimSpace(strings.Trim(ts.Text(cur.ChildByFieldName("indices"), src), "[]"))}, idx...)
				cur = cur.ChildByFieldName("argument")
			}
			if p := n.Parent(); p != nil && p.Type() == "subscript_expression" && p.ChildByFieldName("argument") == n {
				return true
			}
			subs = append(subs, sub{ts.Text(cur, src), idx})
		}
		return true
	})
	// transpose: a 2-D array indexed [..threadIdx.y..][threadIdx.x] and [threadIdx.x][..threadIdx.y..]
	for _, a := range subs {
		if len(a.idx) != 2 || !strings.Contains(a.idx[0], "threadIdx.y") || !strings.Contains(a.idx[1], "threadIdx.x") {
			continue
		}
		for _, b := range subs {
			if b.array == a.array && len(b.idx) == 2 && strings.Contains(b.idx[0], "threadIdx.x") && strings.Contains(b.idx[1], "threadIdx.y") {
				ft.tileSwap = true
			}
		}
	}
	// stencil: the same array read at A - c and at A or A + c.
	minus := regexp.MustCompile(`^(\w+)\s*-\s*(\w+)$`)
	plus := regexp.MustCompile(`^(\w+)\s*\+\s*(\w+)$`)
	for _, a := range subs {
		if len(a.idx) != 1 {
			continue
		}
		m := minus.FindStringSubmatch(a.idx[0])
		if m == nil {
			continue
		}
		for _, b := range subs {
			if b.array != a.array || len(b.idx) != 1 {
				continue
			}
			if b.idx[0] == m[1] {
				ft.stencil = true
			}
			if p := plus.FindStringSubmatch(b.idx[0]); p != nil && p[1] == m[1] {
				ft.stencil = true
			}
		}
	}
}

// isMatIndex: a subscript with two indices, or one whose index multiplies.
func isMatIndex(n *ts.Node, src []byte) bool {
	if n.Type() != "subscript_expression" {
		return false
	}
	if a := n.ChildByFieldName("argument"); a != nil && a.Type() == "subscript_expression" {
		return true
	}
	return strings.Contains(ts.Text(n.ChildByFieldName("indices"), src), "*")
}

func inFor(n *ts.Node) bool {
	return ts.Ancestor(n, "for_statement", "while_statement", "do_statement") != nil
}

// classOf decides the class from the features, by structure.
func classOf(ft features) string {
	switch {
	case ft.atomics && ft.dataAtomic:
		return ClassHistogram
	case ft.shuffleUp || ft.scanLoop && (ft.shared || ft.shuffle):
		return ClassScan
	case ft.mac:
		return ClassMatmulTile
	case ft.tileSwap:
		return ClassTranspose
	case ft.shuffle || ft.reduceLoop && ft.shared || ft.atomics || ft.rowLoop && ft.barrier:
		return ClassRowReduction
	case ft.stencil:
		return ClassStencil
	case ft.threadIndex && !ft.barrier:
		return ClassElementwise
	}
	return ClassOther
}

func reMatch(pat, s string) bool { return regexp.MustCompile(pat).MatchString(s) }
