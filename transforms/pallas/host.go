package pallas

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
)

// hostFn is the C++ host function that launches a kernel, as far as wiring
// needs it: its parameters, how each kernel argument is made from them, what
// it returns and the name Python calls it by.
type hostFn struct {
	name    string
	params  []hostParam
	args    []hostArg // one per kernel parameter, in order
	returns []string  // returned tensor variables
	locals  map[string]string
}

type hostParam struct {
	name   string
	tensor bool
	ctype  string // for scalars: double, float, int64_t, int, bool
}

type hostArg struct {
	tensor string // the tensor variable whose data pointer is passed
	param  int    // host parameter index of tensor (input) or scalar; -1 if local
	like   string // for a local output: the tensor it is shaped like ("" = spec shape)
	text   string
}

var (
	reDataPtr = regexp.MustCompile(`\b(\w+)\s*\.\s*(?:data_ptr|data|mutable_data_ptr|const_data_ptr)\s*(?:<[^>]*>)?\s*\(\s*\)`)
	reFnHead  = regexp.MustCompile(`(?m)^[ \t]*(?:static\s+|inline\s+)*([\w:<>]+(?:\s*<[^>]*>)?[\s&*]*)\s+(\w+)\s*\(([^)]*)\)\s*\{`)
	reLike    = regexp.MustCompile(`(?:torch|at)::(?:empty_like|zeros_like|ones_like)\s*\(\s*(\w+)`)
	reLocal   = regexp.MustCompile(`(?:auto|torch::Tensor|at::Tensor)\s+(\w+)\s*=\s*([^;]+);`)
	reReturn  = regexp.MustCompile(`\breturn\s+([^;]+);`)
	// a local that is the same data as another tensor, laid out for the kernel
	reAlias = regexp.MustCompile(`^\s*(\w+)\s*(?:\.\s*(?:contiguous|view|reshape|flatten|expect_contiguous)\s*\([^;]*\))*\s*$`)
)

// aliasOf follows locals that are another tensor's data (x.contiguous(),
// x.view(...), x.reshape(...), plain copies of the handle) back to the
// tensor they come from; a name that is none of these comes back as is.
func (fn *hostFn) aliasOf(name string) string {
	for range 8 {
		def, ok := fn.locals[name]
		if !ok {
			return name
		}
		m := reAlias.FindStringSubmatch(def)
		if m == nil || m[1] == name {
			return name
		}
		name = m[1]
	}
	return name
}

// findHost reads the source holding kernel k and analyses the host function
// that launches it.
func findHost(src string, k *kernels.Kernel) (*hostFn, error) {
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(k.Name) + `\s*(?:<[^<>]*>)?\s*<<<`)
	loc := re.FindStringIndex(src)
	if loc == nil {
		return nil, fmt.Errorf("no launch of %s in %s", k.Name, k.Path)
	}
	end := strings.Index(src[loc[1]:], ">>>")
	if end < 0 {
		return nil, fmt.Errorf("launch of %s is not closed", k.Name)
	}
	open := loc[1] + end + 3
	for open < len(src) && (src[open] == ' ' || src[open] == '\n' || src[open] == '\t') {
		open++
	}
	if open >= len(src) || src[open] != '(' {
		return nil, fmt.Errorf("launch of %s has no argument list", k.Name)
	}
	args, _, ok := splitArgs(src, open)
	if !ok {
		return nil, fmt.Errorf("launch arguments of %s", k.Name)
	}
	heads := reFnHead.FindAllStringSubmatchIndex(src[:loc[0]], -1)
	if len(heads) == 0 {
		return nil, fmt.Errorf("no host function around the launch of %s", k.Name)
	}
	h := heads[len(heads)-1]
	fn := &hostFn{name: src[h[4]:h[5]], locals: map[string]string{}}
	for _, p := range strings.Split(src[h[6]:h[7]], ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if i := strings.Index(p, "="); i >= 0 {
			p = strings.TrimSpace(p[:i])
		}
		f := strings.Fields(strings.NewReplacer("&", " ", "*", " ").Replace(p))
		if len(f) < 2 {
			return nil, fmt.Errorf("host parameter %q", p)
		}
		name := f[len(f)-1]
		typ := strings.Join(f[:len(f)-1], " ")
		fn.params = append(fn.params, hostParam{name: name, tensor: strings.Contains(typ, "Tensor"), ctype: strings.TrimPrefix(typ, "const ")})
	}
	// body: from the head to the matching brace
	bodyStart := h[1] - 1
	depth, bodyEnd := 0, len(src)
	for i := bodyStart; i < len(src); i++ {
		if src[i] == '{' {
			depth++
		} else if src[i] == '}' {
			depth--
			if depth == 0 {
				bodyEnd = i
				break
			}
		}
	}
	body := src[bodyStart:bodyEnd]
	for _, m := range reLocal.FindAllStringSubmatch(body, -1) {
		fn.locals[m[1]] = m[2]
	}
	paramIdx := func(name string) int {
		for i, p := range fn.params {
			if p.name == name {
				return i
			}
		}
		return -1
	}
	for _, a := range args {
		ha := hostArg{text: a, param: -1}
		if m := reDataPtr.FindStringSubmatch(a); m != nil {
			ha.tensor = fn.aliasOf(m[1])
			ha.param = paramIdx(ha.tensor)
			if ha.param < 0 {
				if l := reLike.FindStringSubmatch(fn.locals[ha.tensor]); l != nil {
					ha.like = fn.aliasOf(l[1])
				}
			}
		} else {
			id := strings.TrimSpace(a)
			for {
				if m := regexp.MustCompile(`^static_cast\s*<[^>]*>\s*\((.*)\)$`).FindStringSubmatch(id); m != nil {
					id = strings.TrimSpace(m[1])
					continue
				}
				if m := regexp.MustCompile(`^\(\s*[\w:]+\s*\)\s*(.*)$`).FindStringSubmatch(id); m != nil {
					id = strings.TrimSpace(m[1])
					continue
				}
				break
			}
			ha.param = paramIdx(id)
		}
		fn.args = append(fn.args, ha)
	}
	rets := reReturn.FindAllStringSubmatch(body, -1)
	if len(rets) > 0 {
		r := strings.TrimSpace(rets[len(rets)-1][1])
		r = strings.TrimSuffix(strings.TrimPrefix(r, "{"), "}")
		for _, x := range strings.Split(r, ",") {
			fn.returns = append(fn.returns, strings.TrimSpace(x))
		}
	}
	return fn, nil
}

// pyName is the name Python calls the host function by: a load_inline
// functions= entry, a PYBIND11 m.def, or a TORCH_LIBRARY op (ns, op).
func pyName(src string, host string) (name, ns string) {
	if m := regexp.MustCompile(`m\.impl\(\s*"(\w+)"\s*,\s*&?\s*(?:\w+::)*` + regexp.QuoteMeta(host) + `\b`).FindStringSubmatch(src); m != nil {
		if n := regexp.MustCompile(`TORCH_LIBRARY(?:_FRAGMENT)?\s*\(\s*(\w+)`).FindStringSubmatch(src); n != nil {
			return m[1], n[1]
		}
	}
	if m := regexp.MustCompile(`m\.def\(\s*"(\w+)"\s*,\s*&?\s*(?:\w+::)*` + regexp.QuoteMeta(host) + `\b`).FindStringSubmatch(src); m != nil {
		return m[1], ""
	}
	return host, ""
}
