package kernels

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pallasify/pallasify/transforms/repofs"
	"github.com/pallasify/pallasify/transforms/ts"
)

// pyRef is a CUDA file a Python file builds (load / CUDAExtension).
type pyRef struct {
	path     string
	origin   string
	by       []string
	line     int
	fastMath bool
}

type pyResult struct {
	exts   []*Extension
	inline []*source
	refs   []*pyRef
	triton []*Kernel
}

// PythonNeedles are the strings of which a Python file must hold one for
// discovery to parse it: a file with none holds no kernel (DiscoverScan).
// There is no "jit": a @triton.jit kernel is read only in a file that
// imports triton.
var PythonNeedles = []string{"load_inline", "cpp_extension", "CUDAExtension", "RawKernel", "RawModule", "triton"}

// python scans one Python file for CUDA sources and Triton kernels.
func (d *discoverer) python(p *ts.Parser, rel string) pyResult {
	text, err := d.read(rel)
	if err != nil || !holdsNeedle(text) {
		return pyResult{}
	}
	tree, err := p.Parse(d.ctx, text)
	if err != nil {
		return pyResult{}
	}
	defer tree.Close()
	return d.pythonTree(rel, tree)
}

// holdsNeedle reports whether text holds one of PythonNeedles.
func holdsNeedle(text []byte) bool {
	for _, n := range PythonNeedles {
		if bytes.Contains(text, []byte(n)) {
			return true
		}
	}
	return false
}

// PythonScan is what discovery finds in one Python file (CUDA sources,
// extensions, the CUDA files it builds, Triton kernels, problems), scanned
// by a caller from its own parse (ScanPythonTree) and handed to
// DiscoverScanned.
type PythonScan struct {
	res   pyResult
	probs []Problem
}

// ScanPythonTree scans the Python file rel under root as discovery does,
// from tree, the caller's parse of the file's text (tree.Src, as read from
// disk), so discovery need not read and parse it again; the scan reads
// only the other files it names. It holds nothing of tree. false when
// discovery would not take that text (over its size limit): leave the file
// to discovery then.
func ScanPythonTree(ctx context.Context, root, rel string, tree *ts.Tree) (*PythonScan, bool) {
	if len(tree.Src) > maxSource {
		return nil, false
	}
	rel = filepath.ToSlash(rel)
	if !holdsNeedle(tree.Src) {
		return &PythonScan{}, true
	}
	rfs, err := repofs.Open(root)
	if err != nil {
		return nil, false
	}
	defer rfs.Close()
	d := &discoverer{ctx: ctx, root: root, fs: rfs}
	res := d.safeScan(rel, func() pyResult { return d.pythonTree(rel, tree) })
	return &PythonScan{res: res, probs: d.probs}, true
}

// pythonTree scans one parsed Python file.
func (d *discoverer) pythonTree(rel string, tree *ts.Tree) pyResult {
	var res pyResult
	text := tree.Src
	pf := &pyFile{d: d, rel: rel, src: text, assigns: map[string][]*ts.Node{}, root: tree.Root(),
		kernVars: map[string]string{}, modVars: map[string]bool{}}
	// Every node in source order, from the flattened tree (no calls into C
	// per node).
	flat := tree.Flat()
	for i, n := range flat.Nodes {
		if flat.Types[i] == "assignment" {
			if l := n.ChildByFieldName("left"); l != nil && l.Type() == "identifier" {
				if r := n.ChildByFieldName("right"); r != nil {
					pf.assigns[ts.Text(l, text)] = append(pf.assigns[ts.Text(l, text)], r)
				}
			}
		}
	}
	usesTriton := strings.Contains(string(text), "import triton") || strings.Contains(string(text), "from triton")
	jits := TritonJitNames(text)
	jitted := map[string]bool{} // functions handed to triton.jit as a call
	var defs []*ts.Node
	for i, n := range flat.Nodes {
		switch flat.Types[i] {
		case "call":
			pf.call(n, &res)
			if fn, ok := TritonJitCall(n, text, jits); ok && usesTriton {
				jitted[fn] = true
			}
		case "decorated_definition":
			if usesTriton {
				pf.triton(n, &res)
			}
		case "function_definition":
			defs = append(defs, n)
		}
	}
	pf.tritonCalled(defs, jitted, &res)
	// k = mod.get_function("name")
	for name, vs := range pf.assigns {
		for _, v := range vs {
			if v.Type() != "call" {
				continue
			}
			fn := v.ChildByFieldName("function")
			if fn.Type() != "attribute" || pf.text(fn.ChildByFieldName("attribute")) != "get_function" || !pf.modVars[pf.text(fn.ChildByFieldName("object"))] {
				continue
			}
			if a := pf.arg(v, "name", 0); a != nil {
				if ss := pf.strings(a); len(ss) == 1 && ss[0].err == "" {
					pf.kernVars[name] = ss[0].text
				}
			}
		}
	}
	if len(pf.kernVars) > 0 {
		launches := pf.cupyLaunches(tree.Root(), pf.kernVars)
		for _, s := range res.inline {
			if s.origin == OriginCuPy {
				s.launches = launches
			}
		}
	}
	return res
}

type pyFile struct {
	d        *discoverer
	rel      string
	src      []byte
	assigns  map[string][]*ts.Node
	root     *ts.Node
	kernVars map[string]string // variable bound to a RawKernel (or get_function) -> kernel name
	modVars  map[string]bool   // variables bound to a RawModule
}

func (pf *pyFile) text(n *ts.Node) string { return ts.Text(n, pf.src) }

func (pf *pyFile) line(n *ts.Node) int { return int(n.StartPoint().Row) + 1 }

func (pf *pyFile) warn(n *ts.Node, format string, a ...any) {
	pf.d.probs = append(pf.d.probs, Problem{Code: CodeUnresolved, Severity: "warning", Path: pf.rel, Line: pf.line(n), Message: fmt.Sprintf(format, a...)})
}

// warnString reports a source string that could not be resolved: PKN008
// when it is a file read refused at the root boundary, else PKN006.
func (pf *pyFile) warnString(n *ts.Node, s pyString, format string, a ...any) {
	code := CodeUnresolved
	if s.outside {
		code = CodeOutside
	}
	pf.d.probs = append(pf.d.probs, Problem{Code: code, Severity: "warning", Path: pf.rel, Line: pf.line(n), Message: fmt.Sprintf(format, a...)})
}

// arg returns the keyword argument kw, or the positional one at pos (-1: none).
func (pf *pyFile) arg(call *ts.Node, kw string, pos int) *ts.Node {
	args := call.ChildByFieldName("arguments")
	if args == nil {
		return nil
	}
	i := 0
	for _, a := range ts.Children(args) {
		if a.Type() == "keyword_argument" {
			if pf.text(a.ChildByFieldName("name")) == kw {
				return a.ChildByFieldName("value")
			}
			continue
		}
		if a.Type() == "comment" {
			continue
		}
		if i == pos {
			return a
		}
		i++
	}
	return nil
}

func (pf *pyFile) call(n *ts.Node, res *pyResult) {
	fn := n.ChildByFieldName("function")
	if fn == nil {
		return
	}
	name := pf.text(fn)
	short := name
	if fn.Type() == "attribute" {
		short = pf.text(fn.ChildByFieldName("attribute"))
	}
	callText := pf.text(n)
	fast := strings.Contains(callText, "use_fast_math")
	switch short {
	case "load_inline":
		v := pf.arg(n, "cuda_sources", 2)
		if v == nil {
			return
		}
		res.exts = append(res.exts, pf.inlineExtension(n))
		for _, s := range pf.strings(v) {
			if s.err != "" {
				pf.warnString(n, s, "load_inline cuda_sources: %s", s.err)
				continue
			}
			res.inline = append(res.inline, &source{path: s.path, text: []byte(s.text), lineBase: s.lineBase, origin: OriginLoadInline, dir: path.Dir(pf.rel), fastMath: fast})
		}
	case "load", "CUDAExtension":
		if short == "load" && !strings.Contains(string(pf.src), "cpp_extension") {
			return
		}
		origin := OriginLoad
		if short == "CUDAExtension" {
			origin = OriginCUDAExtension
		}
		v := pf.arg(n, "sources", 1)
		if v == nil {
			return
		}
		items := []*ts.Node{v}
		if v.Type() == "list" || v.Type() == "tuple" {
			items = ts.Children(v)
		} else if v.Type() == "identifier" {
			if r := pf.resolve(v); r != nil && (r.Type() == "list" || r.Type() == "tuple") {
				items = ts.Children(r)
			}
		}
		ext := pf.extension(n, origin, short)
		res.exts = append(res.exts, ext)
		for _, it := range items {
			p, err := pf.pathOf(it, 0)
			if err != nil {
				pf.warn(it, "%s source %s: %v", short, oneLine(pf.text(it)), err)
				continue
			}
			ext.Sources = appendOne(ext.Sources, p)
			if !strings.HasSuffix(p, ".cu") && !strings.HasSuffix(p, ".cuh") {
				continue
			}
			res.refs = append(res.refs, &pyRef{path: p, origin: origin, by: []string{pf.rel}, line: pf.line(it), fastMath: fast})
		}
	case "RawKernel", "RawModule":
		v := pf.arg(n, "code", 0)
		if v == nil {
			return
		}
		kname := ""
		if short == "RawKernel" {
			if nv := pf.arg(n, "name", 1); nv != nil {
				if ss := pf.strings(nv); len(ss) == 1 && ss[0].err == "" {
					kname = ss[0].text
				}
			}
		}
		if p := n.Parent(); p != nil && p.Type() == "assignment" {
			if l := p.ChildByFieldName("left"); l != nil && l.Type() == "identifier" {
				if short == "RawKernel" {
					pf.kernVars[pf.text(l)] = kname
				} else {
					pf.modVars[pf.text(l)] = true
				}
			}
		}
		for _, s := range pf.strings(v) {
			if s.err != "" {
				pf.warnString(n, s, "%s code: %s", short, s.err)
				continue
			}
			res.inline = append(res.inline, &source{path: s.path, text: []byte(s.text), lineBase: s.lineBase, origin: OriginCuPy, dir: path.Dir(pf.rel), fastMath: fast, cupyName: kname})
		}
	}
}

// resolve returns the last value assigned to an identifier.
func (pf *pyFile) resolve(id *ts.Node) *ts.Node {
	vs := pf.assigns[pf.text(id)]
	var best *ts.Node
	for _, v := range vs {
		if v.StartByte() < id.StartByte() || best == nil {
			best = v
		}
	}
	return best
}

type pyString struct {
	text     string
	path     string // file holding the text
	lineBase int
	err      string
	outside  bool // err: a file read refused at the root boundary
}

// strings resolves a Python expression to CUDA source texts.
func (pf *pyFile) strings(n *ts.Node) []pyString {
	return pf.stringsDepth(n, 0)
}

func (pf *pyFile) stringsDepth(n *ts.Node, depth int) []pyString {
	if depth > 8 {
		return []pyString{{err: "reference chain too long"}}
	}
	switch n.Type() {
	case "string":
		s, ok := pf.literal(n)
		if !ok {
			return []pyString{{err: "f-strings and byte strings are not followed"}}
		}
		return []pyString{s}
	case "concatenated_string":
		var out pyString
		for i, c := range ts.Children(n) {
			s, ok := pf.literal(c)
			if !ok {
				return []pyString{{err: "f-strings are not followed"}}
			}
			if i == 0 {
				out = s
			} else {
				out.text += s.text
			}
		}
		return []pyString{out}
	case "list", "tuple":
		var out []pyString
		for _, c := range ts.Children(n) {
			out = append(out, pf.stringsDepth(c, depth+1)...)
		}
		return out
	case "parenthesized_expression":
		if n.NamedChildCount() == 1 {
			return pf.stringsDepth(n.NamedChild(0), depth+1)
		}
	case "identifier":
		if v := pf.resolve(n); v != nil {
			return pf.stringsDepth(v, depth+1)
		}
		return []pyString{{err: "cannot resolve " + pf.text(n)}}
	case "binary_operator":
		if pf.text(n.ChildByFieldName("operator")) == "+" {
			l := pf.stringsDepth(n.ChildByFieldName("left"), depth+1)
			r := pf.stringsDepth(n.ChildByFieldName("right"), depth+1)
			if len(l) == 1 && len(r) == 1 && l[0].err == "" && r[0].err == "" {
				l[0].text += r[0].text
				return l
			}
		}
	case "call":
		// open(P).read(), Path(P).read_text(), P.read_text()
		fn := n.ChildByFieldName("function")
		if fn != nil && fn.Type() == "attribute" {
			attr := pf.text(fn.ChildByFieldName("attribute"))
			obj := fn.ChildByFieldName("object")
			var pathNode *ts.Node
			switch attr {
			case "read":
				if obj.Type() == "call" && pf.text(obj.ChildByFieldName("function")) == "open" {
					pathNode = pf.arg(obj, "file", 0)
				}
			case "read_text":
				pathNode = obj
			}
			if pathNode != nil {
				p, err := pf.pathOf(pathNode, 0)
				if err != nil {
					return []pyString{{err: err.Error()}}
				}
				b, err := pf.d.read(p)
				if err != nil {
					return []pyString{{err: readMessage(err), outside: refused(err)}}
				}
				return []pyString{{text: string(b), path: p}}
			}
		}
	}
	return []pyString{{err: "cannot follow " + oneLine(pf.text(n))}}
}

// literal decodes a Python string literal (no f-strings, no bytes).
func (pf *pyFile) literal(n *ts.Node) (pyString, bool) {
	raw := pf.text(n)
	i := 0
	for i < len(raw) && raw[i] != '"' && raw[i] != '\'' {
		i++
	}
	prefix := strings.ToLower(raw[:i])
	if strings.ContainsAny(prefix, "fb") || i >= len(raw) {
		return pyString{}, false
	}
	q := 1
	if strings.HasPrefix(raw[i:], `"""`) || strings.HasPrefix(raw[i:], `'''`) {
		q = 3
	}
	if len(raw) < i+2*q {
		return pyString{}, false
	}
	body := raw[i+q : len(raw)-q]
	startOff := int(n.StartByte()) + i + q
	lineBase := strings.Count(string(pf.src[:startOff]), "\n")
	if !strings.Contains(prefix, "r") {
		body = unescapePy(body)
	}
	return pyString{text: body, path: pf.rel, lineBase: lineBase}, true
}

func unescapePy(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	r := strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\t`, "\t", `\"`, `"`, `\'`, `'`, "\\\n", "")
	return r.Replace(s)
}

// pathOf resolves a path expression to a repo-relative path.
func (pf *pyFile) pathOf(n *ts.Node, depth int) (string, error) {
	if depth > 8 {
		return "", fmt.Errorf("reference chain too long")
	}
	dir := path.Dir(pf.rel)
	switch n.Type() {
	case "string":
		s, ok := pf.literal(n)
		if !ok {
			return "", fmt.Errorf("f-string paths are not followed")
		}
		if path.IsAbs(s.text) {
			return "", fmt.Errorf("absolute path %s", s.text)
		}
		// relative to the Python file first (setup.py, scripts run in place),
		// then to the repository root
		cand := path.Join(dir, s.text)
		if ok, _ := pf.d.exists(cand); !ok {
			if ok, _ := pf.d.exists(path.Clean(s.text)); ok {
				return path.Clean(s.text), nil
			}
		}
		return cand, nil
	case "identifier":
		if pf.text(n) == "__file__" {
			return pf.rel, nil
		}
		if v := pf.resolve(n); v != nil {
			return pf.pathOf(v, depth+1)
		}
	case "parenthesized_expression":
		if n.NamedChildCount() == 1 {
			return pf.pathOf(n.NamedChild(0), depth+1)
		}
	case "binary_operator":
		if pf.text(n.ChildByFieldName("operator")) == "/" {
			l, err := pf.pathOf(n.ChildByFieldName("left"), depth+1)
			if err != nil {
				return "", err
			}
			r := n.ChildByFieldName("right")
			if r.Type() == "string" {
				s, ok := pf.literal(r)
				if ok {
					return path.Join(l, s.text), nil
				}
			}
		}
	case "attribute":
		attr := pf.text(n.ChildByFieldName("attribute"))
		if attr == "parent" {
			p, err := pf.pathOf(n.ChildByFieldName("object"), depth+1)
			return path.Dir(p), err
		}
	case "call":
		fn := n.ChildByFieldName("function")
		name := pf.text(fn)
		args := ts.Children(n.ChildByFieldName("arguments"))
		switch {
		case (name == "os.path.join" || name == "join" || name == "path.join") && len(args) > 0:
			p, err := pf.pathOf(args[0], depth+1)
			if err != nil {
				return "", err
			}
			for _, a := range args[1:] {
				if a.Type() != "string" {
					return "", fmt.Errorf("cannot follow %s", oneLine(pf.text(a)))
				}
				s, _ := pf.literal(a)
				p = path.Join(p, s.text)
			}
			return p, nil
		case (name == "os.path.dirname" || name == "dirname") && len(args) == 1:
			p, err := pf.pathOf(args[0], depth+1)
			return path.Dir(p), err
		case (name == "os.path.abspath" || name == "os.path.realpath" || name == "str" || name == "os.fspath" || name == "Path" || name == "pathlib.Path") && len(args) == 1:
			return pf.pathOf(args[0], depth+1)
		case fn.Type() == "attribute" && len(args) == 0:
			attr := pf.text(fn.ChildByFieldName("attribute"))
			if attr == "resolve" || attr == "absolute" {
				return pf.pathOf(fn.ChildByFieldName("object"), depth+1)
			}
		}
	}
	return "", fmt.Errorf("cannot follow %s", oneLine(pf.text(n)))
}

var (
	tritonDeco = regexp.MustCompile(`^@\s*(triton\.)?jit\b|^@\s*triton\.(autotune|heuristics)\b`)
)

// triton records a @triton.jit function (inventory only).
func (pf *pyFile) triton(n *ts.Node, res *pyResult) {
	jit := false
	for _, c := range ts.Children(n) {
		if c.Type() == "decorator" && tritonDeco.MatchString(strings.TrimSpace(pf.text(c))) {
			t := pf.text(c)
			if strings.Contains(t, "jit") || strings.Contains(t, "autotune") || strings.Contains(t, "heuristics") {
				jit = true
			}
		}
	}
	def := n.ChildByFieldName("definition")
	if !jit || def == nil || def.Type() != "function_definition" {
		return
	}
	name := pf.text(def.ChildByFieldName("name"))
	body := pf.text(def)
	k := &Kernel{ID: KernelID(pf.rel, name), Name: name, Path: pf.rel, Line: pf.line(def), Origin: OriginTriton,
		Class: tritonClass(body), SpecStatus: SpecNeedsSpec, Reason: "Triton kernels are inventoried only"}
	res.triton = append(res.triton, k)
}

// tritonCalled records the functions of the file that a triton.jit call
// jits (kern = triton.jit(fn) and its other forms) and that no @triton.jit
// decorator made kernels already: the first def of each name.
func (pf *pyFile) tritonCalled(defs []*ts.Node, jitted map[string]bool, res *pyResult) {
	if len(jitted) == 0 {
		return
	}
	have := map[string]bool{}
	for _, k := range res.triton {
		have[k.Name] = true
	}
	for _, def := range defs {
		name := pf.text(def.ChildByFieldName("name"))
		if !jitted[name] || have[name] {
			continue
		}
		have[name] = true
		res.triton = append(res.triton, &Kernel{ID: KernelID(pf.rel, name), Name: name, Path: pf.rel, Line: pf.line(def),
			Origin: OriginTriton, Class: tritonClass(pf.text(def)), SpecStatus: SpecNeedsSpec, Reason: "Triton kernels are inventoried only"})
	}
}

// tritonClass guesses a Triton kernel's class from the tl calls it makes.
func tritonClass(body string) string {
	has := func(s ...string) bool {
		for _, x := range s {
			if strings.Contains(body, x) {
				return true
			}
		}
		return false
	}
	switch {
	case has("tl.atomic_"):
		return ClassHistogram
	case has("tl.cumsum", "tl.associative_scan", "tl.cumprod"):
		return ClassScan
	case has("tl.dot("):
		return ClassMatmulTile
	case has("tl.trans(", ".T\n", "tl.permute("):
		return ClassTranspose
	case has("tl.sum(", "tl.max(", "tl.min(", "tl.reduce(", "tl.argmax(", "tl.argmin("):
		return ClassRowReduction
	case has("tl.load(") && has("tl.store(") && has("tl.program_id("):
		return ClassElementwise
	}
	return ClassOther
}
