package pallas

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/ts"
)

// unit is a kernel's isolated translation unit, preprocessed and parsed: the
// kernel, the __device__ helpers it may call, global constants and the names
// of __shared__ arrays.
type unit struct {
	src     []byte
	tree    *ts.Tree
	kernel  *ts.Node            // function_definition of the kernel
	funcs   map[string]*ts.Node // device helpers by name
	consts  map[string]*ts.Node // init_declarator of const/constexpr globals
	ctypes  map[string]string   // const global name -> declared type
	shared  map[string]bool     // __shared__ array names
	typeMap map[string]string   // template parameter -> concrete type
}

func (u *unit) close() {
	if u.tree != nil {
		u.tree.Close()
	}
}

var (
	reDefine  = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*define[ \t]+(\w+)(\(([^)]*)\))?[ \t]*((?:[^\n\\]|\\\n|\\.)*)$`)
	rePreproc = regexp.MustCompile(`(?m)^[ \t]*#.*(?:\\\n.*)*$`)
	reShared  = regexp.MustCompile(`__shared__\s+(?:[\w:<>]+\s+)+?\*?\s*(\w+)\s*\[`)
	reIdent   = regexp.MustCompile(`[A-Za-z_]\w*`)
)

type macro struct {
	params []string
	fn     bool
	body   string
}

// parseUnit preprocesses (object- and function-like #define expansion) and
// parses the unit's source with the cpp grammar after masking CUDA keywords.
func parseUnit(ctx context.Context, k *kernels.Kernel) (*unit, error) {
	if k.Unit == nil {
		return nil, refuse(CodeNoUnit, "the kernel has no isolated CUDA unit (origin %s)", k.Origin)
	}
	src := k.Unit.Source
	u := &unit{funcs: map[string]*ts.Node{}, consts: map[string]*ts.Node{}, ctypes: map[string]string{}, shared: map[string]bool{}, typeMap: map[string]string{}}
	for _, m := range reShared.FindAllStringSubmatch(src, -1) {
		u.shared[m[1]] = true
	}
	macros := map[string]macro{}
	for _, m := range reDefine.FindAllStringSubmatch(src, -1) {
		body := strings.ReplaceAll(m[4], "\\\n", " ")
		if i := strings.Index(body, "//"); i >= 0 {
			body = body[:i]
		}
		mc := macro{body: strings.TrimSpace(body)}
		if m[2] != "" {
			mc.fn = true
			for _, p := range strings.Split(m[3], ",") {
				if p = strings.TrimSpace(p); p != "" {
					mc.params = append(mc.params, p)
				}
			}
		}
		macros[m[1]] = mc
	}
	masked, _ := kernels.Mask([]byte(src))
	text := rePreproc.ReplaceAllStringFunc(string(masked), func(s string) string { return strings.Repeat("\n", strings.Count(s, "\n")) })
	text, err := expandMacros(text, macros)
	if err != nil {
		return nil, err
	}
	u.src = []byte(text)
	p := ts.NewParser(ts.Cpp)
	defer p.Close()
	tree, err := p.Parse(ctx, u.src)
	if err != nil {
		return nil, fmt.Errorf("parse unit: %w", err)
	}
	u.tree = tree
	for name, v := range k.TemplateArgs {
		u.typeMap[name] = v
	}
	if k.Spec != nil {
		for name, v := range k.Spec.TemplateArgs {
			u.typeMap[name] = v
		}
	}
	name := k.Name
	if len(k.Specializes) > 0 {
		name += "<" + strings.Join(k.Specializes, ",") + ">" // the explicit specialisation, not its primary
	}
	u.collect(tree.Root(), name)
	if u.kernel == nil {
		u.close()
		return nil, refuse(CodeUnsupported, "kernel %s not found in its isolated unit", k.Name)
	}
	return u, nil
}

func (u *unit) collect(n *ts.Node, kernel string) {
	for _, c := range ts.Children(n) {
		switch c.Type() {
		case "linkage_specification":
			if b := c.ChildByFieldName("body"); b != nil && b.Type() == "function_definition" {
				u.addFunc(b, kernel)
			} else if b != nil {
				u.collect(b, kernel)
			}
		case "namespace_definition", "declaration_list":
			if b := c.ChildByFieldName("body"); b != nil {
				u.collect(b, kernel)
			} else {
				u.collect(c, kernel)
			}
		case "template_declaration":
			for _, cc := range ts.Children(c) {
				if cc.Type() == "function_definition" {
					u.addFunc(cc, kernel)
				}
			}
		case "function_definition":
			u.addFunc(c, kernel)
		case "declaration":
			typ := u.text(c.ChildByFieldName("type"))
			for _, d := range ts.Children(c) {
				if d.Type() == "init_declarator" {
					name := u.text(d.ChildByFieldName("declarator"))
					u.consts[name] = d
					u.ctypes[name] = typ
				}
			}
		}
	}
}

func (u *unit) addFunc(fn *ts.Node, kernel string) {
	name := funcName(fn, u.src)
	if name == "" {
		return
	}
	if squash(name) == squash(kernel) && u.kernel == nil {
		u.kernel = fn
		return
	}
	if _, ok := u.funcs[name]; !ok {
		u.funcs[name] = fn
	}
}

func funcName(fn *ts.Node, src []byte) string {
	d := fn.ChildByFieldName("declarator")
	for d != nil && d.Type() != "function_declarator" {
		d = d.ChildByFieldName("declarator")
	}
	if d == nil {
		return ""
	}
	name := ts.Text(d.ChildByFieldName("declarator"), src)
	targs := ""
	if i := strings.Index(name, "<"); i >= 0 {
		name, targs = name[:i], name[i:] // an explicit specialisation: k<at::Half>
	}
	if i := strings.LastIndex(name, "::"); i >= 0 {
		name = name[i+2:]
	}
	return strings.TrimSpace(name) + targs
}

// squash drops the white space of a C++ name (k< at::Half > is k<at::Half>).
func squash(s string) string { return strings.Join(strings.Fields(s), "") }

func (u *unit) text(n *ts.Node) string {
	if n == nil {
		return ""
	}
	return ts.Text(n, u.src)
}

// expandMacros expands macros in text until nothing changes (bounded).
func expandMacros(text string, macros map[string]macro) (string, error) {
	if len(macros) == 0 {
		return text, nil
	}
	for round := 0; round < 16; round++ {
		changed := false
		var b strings.Builder
		i := 0
		for i < len(text) {
			loc := reIdent.FindStringIndex(text[i:])
			if loc == nil {
				b.WriteString(text[i:])
				break
			}
			s, e := i+loc[0], i+loc[1]
			if s > 0 && (isIdentByte(text[s-1]) || text[s-1] >= '0' && text[s-1] <= '9') {
				b.WriteString(text[i:e])
				i = e
				continue
			}
			name := text[s:e]
			m, ok := macros[name]
			if !ok {
				b.WriteString(text[i:e])
				i = e
				continue
			}
			b.WriteString(text[i:s])
			if !m.fn {
				b.WriteString("(" + m.body + ")")
				i = e
				changed = true
				continue
			}
			j := e
			for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
				j++
			}
			if j >= len(text) || text[j] != '(' {
				b.WriteString(name)
				i = e
				continue
			}
			args, end, ok := splitArgs(text, j)
			if !ok || len(args) != len(m.params) {
				return "", refuse(CodeUnsupported, "macro %s is called with arguments it cannot expand", name)
			}
			body := reIdent.ReplaceAllStringFunc(m.body, func(id string) string {
				for pi, p := range m.params {
					if p == id {
						return "(" + args[pi] + ")"
					}
				}
				return id
			})
			b.WriteString("(" + body + ")")
			i = end
			changed = true
		}
		text = b.String()
		if !changed {
			return text, nil
		}
	}
	return "", refuse(CodeUnsupported, "macros expand recursively")
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// splitArgs splits the parenthesised argument list starting at text[open].
func splitArgs(text string, open int) (args []string, end int, ok bool) {
	depth, start := 0, open+1
	for i := open; i < len(text); i++ {
		switch text[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				if a := strings.TrimSpace(text[start:i]); a != "" || len(args) > 0 {
					args = append(args, a)
				}
				return args, i + 1, true
			}
		case ',':
			if depth == 1 {
				args = append(args, strings.TrimSpace(text[start:i]))
				start = i + 1
			}
		}
	}
	return nil, 0, false
}
