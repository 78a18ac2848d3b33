package files

import (
	"regexp"
	"strings"
)

// TorchTPURequirement is the line a TPU set gets: torch-tpu 0.2.0 from PyPI
// (wheels for cp311-cp313, manylinux x86_64; it requires
// torch>=2.11.0,<=2.15.0 and libtpu).
const TorchTPURequirement = "torch-tpu==0.2.0"

// item is one entry of a requirement set: a requirement, an index option or
// URL, or a conda channel, at a line (1-based) and byte column (1-based).
type item struct {
	line, col int
	text      string // the requirement or option as written
	what      itemKind
	whole     bool // the line holds this item only (a requirement file's line)
}

type itemKind int

const (
	itemReq     itemKind = iota // a pip requirement ("torch>=2.1", "xformers==0.0.18")
	itemConda                   // a conda package ("pytorch::pytorch-cuda=11.7.0")
	itemIndex                   // an index or find-links option, or an index URL
	itemChannel                 // a conda channel
)

var (
	reqName     = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$`)
	cudaIndex   = regexp.MustCompile(`(?i)(download\.pytorch\.org/whl/(nightly/)?cu\d{2,3}|pypi\.(ngc\.)?nvidia\.com|[/+]cu\d{3}\b|[/=]cu\d{2,3}(/|$|\.html))`)
	cuSuffix    = regexp.MustCompile(`-cu\d{2,3}[a-z]?$`)
	indexOption = regexp.MustCompile(`^(-i|--index-url|--extra-index-url|-f|--find-links)(\s+|=)(\S+)`)
	localCUDA   = regexp.MustCompile(`\+cu\d+`)
)

// normName is a package name as PEP 503 compares it.
func normName(s string) string {
	return strings.ToLower(strings.NewReplacer("_", "-", ".", "-").Replace(s))
}

// splitReq returns a requirement's normalised name, extras and the rest
// (specifiers, markers); ok is false for a line that is no named
// requirement (a URL, a path, an option).
func splitReq(s string) (name, extras, rest string, ok bool) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-") || strings.Contains(strings.SplitN(s, " ", 2)[0], "://") {
		return "", "", "", false
	}
	m := reqName.FindStringSubmatch(s)
	if m == nil {
		return "", "", "", false
	}
	return normName(m[1]), m[2], m[3], true
}

// cudaOnly says why the package a requirement names is CUDA-only, or "".
// pinned: the requirement has a version specifier (a pinned triton is a
// CUDA choice; a bare one is what torch brings).
func cudaOnly(name, extras, rest string) string {
	switch name {
	case "pytorch-cuda", "cudatoolkit", "cuda-toolkit", "cuda-python", "pycuda", "cupy":
		return "the CUDA toolkit or its bindings"
	case "xformers":
		return "xformers' attention kernels are CUDA builds (torch's scaled_dot_product_attention runs on TPU)"
	case "flash-attn", "flash-attn-3":
		return "FlashAttention is a CUDA kernel package (torch's scaled_dot_product_attention runs on TPU)"
	case "bitsandbytes":
		return "bitsandbytes quantization runs on CUDA (no TorchTPU path)"
	case "mmcv-full":
		return "mmcv-full is mmcv built with its CUDA ops"
	case "onnxruntime-gpu":
		return "the CUDA build of ONNX Runtime (onnxruntime is the CPU one)"
	case "tensorrt", "torch-tensorrt", "nvidia-pyindex":
		return "NVIDIA's inference stack"
	case "mamba-ssm", "causal-conv1d":
		return "a CUDA extension package"
	case "triton":
		if strings.TrimSpace(rest) != "" {
			return "a pinned Triton compiles GPU kernels only (torch brings the Triton it needs)"
		}
		return ""
	}
	switch {
	case strings.HasPrefix(name, "nvidia-"):
		return "an NVIDIA CUDA library wheel"
	case strings.HasPrefix(name, "cupy-cuda"):
		return "CuPy built for CUDA"
	case cuSuffix.MatchString(name):
		return "a wheel built for one CUDA version (" + name[strings.LastIndex(name, "-")+1:] + ")"
	case strings.HasSuffix(name, "-gpu"):
		return "the GPU (CUDA) build of " + strings.TrimSuffix(name, "-gpu")
	case strings.Contains(strings.ToLower(extras), "cuda"):
		return "its CUDA extra " + extras
	}
	return ""
}

// version is a release number's leading integers.
func version(s string) []int {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "+"); i >= 0 {
		s = s[:i]
	}
	var out []int
	for _, p := range strings.Split(s, ".") {
		n := 0
		digits := 0
		for _, c := range p {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
			digits++
		}
		if digits == 0 {
			break
		}
		out = append(out, n)
	}
	return out
}

func cmpVersion(a, b []int) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		x, y := 0, 0
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

var clause = regexp.MustCompile(`(===|==|!=|~=|>=|<=|>|<)\s*([0-9][0-9A-Za-z.*+!-]*)`)

// torchRange are the torch releases torch-tpu 0.2.0 accepts
// (torch>=2.11.0,<=2.15.0), as the versions a specifier is tried against.
var torchRange = [][]int{{2, 11, 0}, {2, 12, 0}, {2, 13, 0}, {2, 14, 0}, {2, 15, 0}}

// torchConflict says why a torch requirement's specifiers rule out every
// torch that torch-tpu 0.2.0 accepts (or pin a CUDA build), or "".
func torchConflict(rest string) string {
	spec := rest
	if i := strings.Index(spec, ";"); i >= 0 {
		spec = spec[:i]
	}
	if m := localCUDA.FindString(spec); m != "" {
		return "pins a CUDA build (" + m + ")"
	}
	cl := clause.FindAllStringSubmatch(spec, -1)
	if len(cl) == 0 {
		return ""
	}
	for _, v := range torchRange {
		if satisfies(v, cl) {
			return ""
		}
	}
	return "allows no torch that torch-tpu 0.2.0 accepts (torch>=2.11.0,<=2.15.0)"
}

func satisfies(v []int, clauses [][]string) bool {
	for _, c := range clauses {
		op, want := c[1], c[2]
		wild := strings.HasSuffix(want, ".*")
		w := version(strings.TrimSuffix(want, ".*"))
		d := cmpVersion(v, w)
		ok := true
		switch op {
		case "==", "===":
			if wild {
				ok = prefix(v, w)
			} else {
				ok = d == 0
			}
		case "!=":
			ok = d != 0
		case ">=":
			ok = d >= 0
		case "<=":
			ok = d <= 0
		case ">":
			ok = d > 0
		case "<":
			ok = d < 0
		case "~=":
			ok = d >= 0 && len(w) > 1 && prefix(v, w[:len(w)-1])
		}
		if !ok {
			return false
		}
	}
	return true
}

func prefix(v, p []int) bool {
	for i, x := range p {
		if i >= len(v) || v[i] != x {
			return false
		}
	}
	return true
}

// items lists the entries of a requirement set of the pass's kind.
func items(p *Pass) []item {
	switch p.Kind {
	case Requirements:
		return requirementItems(p)
	case Pyproject:
		return pyprojectItems(p)
	case SetupCfg:
		return setupCfgItems(p)
	case SetupPy:
		return setupPyItems(p)
	case Conda:
		return condaItems(p)
	}
	return nil
}

// stripComment drops a requirement line's comment (" #" or a leading "#").
func stripComment(s string) string {
	if strings.HasPrefix(strings.TrimSpace(s), "#") {
		return ""
	}
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
			return s[:i]
		}
	}
	return s
}

func indent(s string) int { return len(s) - len(strings.TrimLeft(s, " \t")) }

func requirementItems(p *Pass) []item {
	var out []item
	for i, l := range p.Lines {
		text := strings.TrimSpace(stripComment(l.Text))
		if text == "" || strings.HasSuffix(text, "\\") {
			continue
		}
		it := item{line: i + 1, col: indent(l.Text) + 1, text: text, whole: true}
		if m := indexOption.FindStringSubmatch(text); m != nil {
			it.what = itemIndex
		} else if strings.HasPrefix(text, "-") {
			continue
		}
		out = append(out, it)
	}
	return out
}

var (
	quoted      = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"|'([^']*)'`)
	tomlSection = regexp.MustCompile(`^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$`)
	tomlArray   = regexp.MustCompile(`^\s*([A-Za-z0-9_.-]+|"[^"]+")\s*=\s*\[`)
	tomlKey     = regexp.MustCompile(`^\s*([A-Za-z0-9_.-]+|"[^"]+")\s*=`)
)

// pyprojectItems: the strings of dependency arrays ([project]
// dependencies, [project.optional-dependencies], [dependency-groups],
// [build-system] requires), the keys of poetry's dependency tables, and
// every quoted URL of a CUDA-only index ([tool.uv], [[tool.uv.index]],
// [[tool.poetry.source]], ...).
func pyprojectItems(p *Pass) []item {
	var out []item
	section := ""
	inArray := false
	for i, l := range p.Lines {
		text := l.Text
		if m := tomlSection.FindStringSubmatch(text); m != nil && !inArray {
			section = m[1]
			continue
		}
		for _, q := range quoted.FindAllStringSubmatchIndex(text, -1) {
			var s string
			if q[2] >= 0 {
				s = text[q[2]:q[3]]
			} else {
				s = text[q[4]:q[5]]
			}
			if cudaIndex.MatchString(s) && strings.Contains(s, "://") {
				out = append(out, item{line: i + 1, col: q[0] + 2, text: s, what: itemIndex})
			}
		}
		depTable := strings.HasPrefix(section, "tool.poetry") && strings.HasSuffix(section, "dependencies")
		depArrays := section == "project" || section == "project.optional-dependencies" || section == "dependency-groups" || section == "build-system"
		if m := tomlArray.FindStringSubmatchIndex(text); m != nil && depArrays && !inArray {
			key := strings.Trim(text[m[2]:m[3]], `"`)
			if section != "project" || key == "dependencies" {
				if section != "build-system" || key == "requires" {
					inArray = true
					text = text[m[1]:]
					out = append(out, arrayStrings(i+1, m[1], text)...)
					if closes(text) {
						inArray = false
					}
					continue
				}
			}
		}
		if inArray {
			out = append(out, arrayStrings(i+1, 0, text)...)
			if closes(text) {
				inArray = false
			}
			continue
		}
		if depTable {
			if m := tomlKey.FindStringSubmatch(text); m != nil {
				out = append(out, item{line: i + 1, col: indent(text) + 1, text: strings.Trim(m[1], `"`)})
			}
		}
	}
	return out
}

// closes reports whether an array's line ends it (a "]" outside strings).
func closes(text string) bool {
	t := quoted.ReplaceAllString(text, `""`)
	if i := strings.Index(t, "#"); i >= 0 {
		t = t[:i]
	}
	return strings.Contains(t, "]")
}

func arrayStrings(line, off int, text string) []item {
	var out []item
	if i := strings.Index(quoted.ReplaceAllStringFunc(text, func(s string) string { return strings.Repeat("x", len(s)) }), "#"); i >= 0 {
		text = text[:i]
	}
	for _, q := range quoted.FindAllStringSubmatchIndex(text, -1) {
		s, at := "", 0
		if q[2] >= 0 {
			s, at = text[q[2]:q[3]], q[2]
		} else {
			s, at = text[q[4]:q[5]], q[4]
		}
		out = append(out, item{line: line, col: off + at + 1, text: s})
	}
	return out
}

var iniKey = regexp.MustCompile(`^([A-Za-z0-9_.-]+)\s*[=:]\s*(.*)$`)

// setupCfgItems: install_requires, setup_requires, tests_require and every
// key of [options.extras_require], values and continuation lines; and
// dependency_links URLs.
func setupCfgItems(p *Pass) []item {
	var out []item
	section, key := "", ""
	for i, l := range p.Lines {
		text := l.Text
		trim := strings.TrimSpace(text)
		if trim == "" || strings.HasPrefix(trim, "#") || strings.HasPrefix(trim, ";") {
			continue
		}
		if strings.HasPrefix(trim, "[") && indent(text) == 0 {
			section, key = strings.Trim(trim, "[]"), ""
			continue
		}
		value, col := trim, indent(text)
		if indent(text) == 0 {
			m := iniKey.FindStringSubmatch(text)
			if m == nil {
				key = ""
				continue
			}
			key = m[1]
			value, col = strings.TrimSpace(m[2]), len(text)-len(m[2])
		}
		reqKey := section == "options.extras_require" ||
			section == "options" && (key == "install_requires" || key == "setup_requires" || key == "tests_require")
		switch {
		case value == "":
		case section == "options" && key == "dependency_links" && cudaIndex.MatchString(value):
			out = append(out, item{line: i + 1, col: col + 1, text: value, what: itemIndex})
		case reqKey:
			out = append(out, item{line: i + 1, col: col + 1, text: strings.TrimSpace(stripComment(value))})
		}
	}
	return out
}

var setupReqKey = regexp.MustCompile(`\b(install_requires|extras_require|setup_requires|tests_require)\s*=\s*`)

// setupPyItems: the string literals of setup()'s install_requires,
// extras_require, setup_requires and tests_require when given as literals
// (a list or dict spanning the brackets after the keyword).
func setupPyItems(p *Pass) []item {
	var out []item
	src := string(p.Src)
	for _, m := range setupReqKey.FindAllStringIndex(src, -1) {
		at := m[1]
		if at >= len(src) || (src[at] != '[' && src[at] != '{') {
			continue
		}
		depth, end := 0, -1
	scan:
		for j := at; j < len(src); j++ {
			switch src[j] {
			case '[', '{', '(':
				depth++
			case ']', '}', ')':
				depth--
				if depth == 0 {
					end = j
					break scan
				}
			case '#':
				for j < len(src) && src[j] != '\n' {
					j++
				}
			}
		}
		if end < 0 {
			continue
		}
		for _, q := range quoted.FindAllStringSubmatchIndex(src[at:end], -1) {
			s, off := "", 0
			if q[2] >= 0 {
				s, off = src[at+q[2]:at+q[3]], at+q[2]
			} else {
				s, off = src[at+q[4]:at+q[5]], at+q[4]
			}
			if strings.HasPrefix(strings.TrimSpace(src[at+q[1]:end]), ":") {
				continue // an extras_require key
			}
			ln := strings.Count(src[:off], "\n") + 1
			out = append(out, item{line: ln, col: off - p.Lines[ln-1].Start + 1, text: s})
		}
	}
	return out
}

var condaItem = regexp.MustCompile(`^(\s*)-\s+(.+?)\s*$`)

// condaItems: the channels, the conda packages under dependencies (with
// `channel::name=version` syntax) and the pip section's entries.
func condaItems(p *Pass) []item {
	var out []item
	block, pipIndent := "", -1
	for i, l := range p.Lines {
		text := strings.TrimRight(stripComment(l.Text), " \t")
		if strings.TrimSpace(text) == "" {
			continue
		}
		if indent(text) == 0 && !strings.HasPrefix(text, "-") {
			block, pipIndent = strings.TrimSuffix(strings.TrimSpace(text), ":"), -1
			continue
		}
		m := condaItem.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		ind, val := len(m[1]), strings.Trim(m[2], `"'`)
		col := strings.Index(text, m[2]) + 1
		switch {
		case block == "channels":
			out = append(out, item{line: i + 1, col: col, text: val, what: itemChannel})
		case block == "dependencies" && val == "pip:":
			pipIndent = ind
		case block == "dependencies" && pipIndent >= 0 && ind > pipIndent:
			it := item{line: i + 1, col: col, text: val}
			if indexOption.MatchString(val) {
				it.what = itemIndex
			}
			out = append(out, it)
		case block == "dependencies":
			pipIndent = -1
			out = append(out, item{line: i + 1, col: col, text: val, what: itemConda})
		}
	}
	return out
}

// condaName splits a conda spec ("pytorch::pytorch-cuda=11.7.0") into its
// channel and name.
func condaName(spec string) (channel, name string) {
	if c, rest, ok := strings.Cut(spec, "::"); ok {
		channel, spec = c, rest
	}
	end := strings.IndexAny(spec, "=<>!~ [")
	if end < 0 {
		end = len(spec)
	}
	return channel, normName(spec[:end])
}
