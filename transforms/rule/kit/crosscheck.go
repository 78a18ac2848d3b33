package kit

import (
	"bytes"
	"path"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// CrossCheckNote ends the message of a device finding left unfixed inside a
// test that compares CUDA with the CPU (see CrossChecks).
const CrossCheckNote = "; not rewritten for the portable target: this test compares a CUDA result with a CPU one, and on a " +
	"machine without CUDA DEVICE is the CPU, so it would compare the CPU with itself and pass vacuously (PDX012)"

// CrossCheck is a test function that computes something on CUDA and on the
// CPU, with no skip for hosts without CUDA: its name and its byte range.
type CrossCheck struct {
	Name       *ts.Node
	Start, End int
}

// TestModule reports whether the module holds tests: its file is named
// test_*.py or *_test.py, or sits under a tests/ or test/ directory, or it
// imports pytest or unittest.
func TestModule(p *rule.Pass) bool {
	base := path.Base(p.Path)
	if strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") {
		return true
	}
	for _, c := range strings.Split(path.Dir(p.Path), "/") {
		if c == "tests" || c == "test" {
			return true
		}
	}
	for _, q := range p.Imports.Modules {
		if q == "pytest" || q == "unittest" || strings.HasPrefix(q, "unittest.") {
			return true
		}
	}
	for _, q := range p.Imports.Names {
		if strings.HasPrefix(q, "pytest.") || strings.HasPrefix(q, "unittest.") {
			return true
		}
	}
	return false
}

// CrossChecks returns the module's tests that compare CUDA with the CPU: in
// a test module (TestModule), a function named test* whose body mentions
// cuda and the CPU (`.cpu()`, a "cpu" string), and that neither it (its
// decorators, its body) nor its class skips on a host without CUDA
// (is_available, skip). Computed once per file.
func CrossChecks(p *rule.Pass) []CrossCheck {
	return p.Memo("kit.crosschecks", func() any {
		var out []CrossCheck
		if !Mentions(p.Src, "cuda") || !Mentions(p.Src, "cpu") || !TestModule(p) {
			return out
		}
		WalkHits(p, []string{"cuda"}, func(n *ts.Node) bool {
			switch n.Type() {
			case "string", "comment":
				return false
			case "function_definition":
				name := n.ChildByFieldName("name")
				if name == nil || !strings.HasPrefix(p.Text(name), "test") {
					return true
				}
				if !mentionsCUDA(p, n) || !mentionsCPU(codeOf(p, n)) || skipsWithoutCUDA(p, n) {
					return false
				}
				out = append(out, CrossCheck{Name: name, Start: Start(n), End: End(n)})
				return false
			}
			return true
		})
		return out
	}).([]CrossCheck)
}

// mentionsCUDA reports whether n's text names cuda where the pipeline's
// pre-check counts the needle `\qcuda` (rule.StringStart): in code (a name,
// an attribute, anywhere in an f-string), or opening the content of a
// string literal that is not a whole statement, before a quote or ":"
// (rule.StringOpens: "cuda", "cuda:0"). A "cuda" only in comments,
// docstrings or other text ("runs on cuda") is not a mention: the test does not compute on CUDA
// there, and the pre-check, which does not run the rule on such a file,
// agrees with the rule.
//
// Where "cuda" occurs is found once, in n's text: each node below then
// asks a binary search, not a scan of its own text (a scan per level
// costs the nesting depth times the text).
func mentionsCUDA(p *rule.Pass, n *ts.Node) bool {
	base := Start(n)
	return mentionsCUDAIn(p, FindHits(p.Src[base:End(n)], []string{"cuda"}), base, n)
}

// mentionsCUDAIn is mentionsCUDA with the occurrences of "cuda" in hand
// (offsets from base).
func mentionsCUDAIn(p *rule.Pass, h Hits, base int, n *ts.Node) bool {
	if !h.In(Start(n)-base, End(n)-base-len("cuda")+1) {
		return false
	}
	switch n.Type() {
	case "comment":
		return false
	case "string":
		if par := n.Parent(); par != nil && par.Type() == "expression_statement" && par.NamedChildCount() == 1 {
			return false // a docstring or another bare string statement
		}
		kids := ts.Children(n)
		if len(kids) == 0 || kids[0].Type() != "string_start" {
			return false
		}
		if strings.ContainsAny(p.Text(kids[0]), "fFtT") {
			return true // an f-string: the pre-check reads it as code
		}
		at := End(kids[0])
		return bytes.HasPrefix(p.Src[at:End(n)], []byte("cuda")) && rule.StringOpens(p.Src, at+4)
	}
	if n.ChildCount() == 0 {
		return true // a name or another token
	}
	for _, c := range ts.Children(n) {
		if mentionsCUDAIn(p, h, base, c) {
			return true
		}
	}
	return false
}

// codeOf is n's text with its comments blanked out: what the code says,
// not what a comment (one of pallasify's --mark comments among them) says.
func codeOf(p *rule.Pass, n *ts.Node) []byte {
	b := append([]byte(nil), p.Src[Start(n):End(n)]...)
	base := Start(n)
	ts.Walk(n, func(c *ts.Node) bool {
		if c.Type() == "comment" {
			for i := Start(c) - base; i < End(c)-base; i++ {
				b[i] = ' '
			}
			return false
		}
		return true
	})
	return b
}

func mentionsCPU(b []byte) bool {
	return bytes.Contains(b, []byte(".cpu()")) || bytes.Contains(b, []byte(`"cpu"`)) || bytes.Contains(b, []byte(`'cpu'`))
}

// skipsWithoutCUDA reports whether a test (or a class or decorated
// definition around it) names a skip or a CUDA probe: then a host without
// CUDA skips it, before and after the rewrite.
func skipsWithoutCUDA(p *rule.Pass, fn *ts.Node) bool {
	skip := func(b []byte) bool {
		return bytes.Contains(b, []byte("is_available")) || bytes.Contains(b, []byte("skip"))
	}
	if skip(p.Src[Start(fn):End(fn)]) {
		return true
	}
	for a := fn.Parent(); a != nil; a = a.Parent() {
		switch a.Type() {
		case "decorated_definition":
			if skip(p.Src[Start(a):End(a)]) {
				return true
			}
		case "class_definition":
			// The class's own decorators and setUp-style skips.
			if skip(p.Src[Start(a):End(a)]) {
				return true
			}
		}
	}
	return false
}

// InCrossCheck reports whether offset off lies inside one of CrossChecks.
func InCrossCheck(p *rule.Pass, off int) bool {
	for _, c := range CrossChecks(p) {
		if c.Start <= off && off < c.End {
			return true
		}
	}
	return false
}
