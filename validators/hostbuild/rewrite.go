package hostbuild

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/validators/emulator"
)

// KernelDecl is one __global__ function as the sources declare it.
type KernelDecl struct {
	Name   string
	Params []ParamDecl
	File   string
	Line   int
}

// ParamDecl is a kernel parameter: its name and declared type text.
type ParamDecl struct {
	Name string
	Type string
}

var (
	globalRe   = regexp.MustCompile(`\b__global__\b`)
	identEnd   = regexp.MustCompile(`([A-Za-z_]\w*)\s*$`)
	skipBefore = map[string]bool{"__launch_bounds__": true, "__attribute__": true, "__align__": true, "alignas": true,
		"C10_LAUNCH_BOUNDS_0": true, "C10_LAUNCH_BOUNDS_1": true, "C10_LAUNCH_BOUNDS_2": true, "__maxnreg__": true}
)

// ParseKernels finds the __global__ functions of one file (code is the file
// with comments and strings blanked).
func ParseKernels(file, code string) []KernelDecl {
	var out []KernelDecl
	for _, loc := range globalRe.FindAllStringIndex(code, -1) {
		i := loc[1]
		// Find the parameter list: the first '(' whose preceding identifier is
		// not an attribute macro, before any ';' or '{'.
		for i < len(code) {
			j := strings.IndexAny(code[i:], "(;{")
			if j < 0 || code[i+j] != '(' {
				i = -1
				break
			}
			open := i + j
			close := matchForward(code, open, '(', ')')
			if close < 0 {
				i = -1
				break
			}
			m := identEnd.FindStringSubmatch(code[i:open])
			if m != nil && !skipBefore[m[1]] {
				if strings.HasPrefix(m[1], "__") && m[1] != "__global__" && strings.HasSuffix(m[1], "__") {
					i = close + 1
					continue
				}
				params := splitTop(code[open+1 : close])
				k := KernelDecl{Name: m[1], File: file, Line: 1 + strings.Count(code[:open], "\n")}
				for _, p := range params {
					if pd, ok := parseParam(p); ok {
						k.Params = append(k.Params, pd)
					}
				}
				out = append(out, k)
				break
			}
			i = close + 1
		}
	}
	return out
}

var paramName = regexp.MustCompile(`([A-Za-z_]\w*)\s*(\[[^\]]*\]\s*)*$`)

func parseParam(p string) (ParamDecl, bool) {
	p = strings.TrimSpace(p)
	if p == "" || p == "void" {
		return ParamDecl{}, false
	}
	if i := topLevelIndex(p, '='); i >= 0 {
		p = strings.TrimSpace(p[:i])
	}
	p = strings.Join(strings.Fields(p), " ")
	m := paramName.FindStringSubmatchIndex(p)
	if m == nil {
		return ParamDecl{Type: p}, true
	}
	name := p[m[2]:m[3]]
	typ := strings.TrimSpace(p[:m[2]] + p[m[3]:])
	if typ == "" || isTypeWord(name) || strings.HasSuffix(typ, "::") {
		return ParamDecl{Type: p}, true // unnamed parameter
	}
	return ParamDecl{Name: name, Type: typ}, true
}

func isTypeWord(s string) bool {
	switch s {
	case "int", "float", "double", "char", "bool", "long", "short", "unsigned", "signed", "size_t", "const", "__restrict__", "__restrict":
		return true
	}
	return false
}

func topLevelIndex(s string, c byte) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '<', '[', '{':
			depth++
		case ')', '>', ']', '}':
			depth--
		default:
			if s[i] == c && depth == 0 {
				return i
			}
		}
	}
	return -1
}

// splitTop splits at commas outside (), <>, [], {}.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '<', '[', '{':
			depth++
		case ')', '>', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if strings.TrimSpace(s[start:]) != "" || len(out) > 0 {
		out = append(out, s[start:])
	}
	return out
}

func matchForward(code string, open int, o, c byte) int {
	depth := 0
	for i := open; i < len(code); i++ {
		switch code[i] {
		case o:
			depth++
		case c:
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// KernelTable maps a kernel name to its declarations (overloads and
// repeated declarations; definitions with named parameters first).
type KernelTable map[string][]KernelDecl

// Add records the kernels of one file.
func (t KernelTable) Add(file, src string) {
	for _, k := range ParseKernels(file, emulator.BlankCommentsAndStrings(src)) {
		t[k.Name] = append(t[k.Name], k)
	}
}

// encode renders the declarations of name as cudaemu::host::Site.params:
// overloads separated by \036, parameters by \037, name and type by \035,
// one overload per distinct parameter count (the best-named one).
func (t KernelTable) encode(name string) string {
	best := map[int]KernelDecl{}
	for _, k := range t[name] {
		n := len(k.Params)
		if old, ok := best[n]; !ok || named(k) > named(old) {
			best[n] = k
		}
	}
	var counts []int
	for n := range best {
		counts = append(counts, n)
	}
	sort.Ints(counts)
	var ovs []string
	for _, n := range counts {
		var ps []string
		for _, p := range best[n].Params {
			ps = append(ps, p.Name+"\035"+p.Type)
		}
		ovs = append(ovs, strings.Join(ps, "\037"))
	}
	return strings.Join(ovs, "\036")
}

func named(k KernelDecl) int {
	n := 0
	for _, p := range k.Params {
		if p.Name != "" {
			n++
		}
	}
	return n
}

// cQuote renders s as a C string literal, octal escapes for control bytes.
func cQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// LaunchSite is one `<<<...>>>` launch found in the build's files.
type LaunchSite struct {
	Kernel string `json:"kernel"`
	File   string `json:"file"`
	Line   int    `json:"line"`
}

// RewriteLaunches turns every `callee<<<cfg>>>(args)` of src into a call of
// cudaemu::host::launch (see host/cudaemu_host.h). Newlines are kept so line
// numbers hold. It returns the rewritten text and the launches it found; a
// launch it cannot parse is an error naming its line.
func RewriteLaunches(src string, table KernelTable) (string, []LaunchSite, error) {
	code := emulator.BlankCommentsAndStrings(src)
	var b strings.Builder
	var sites []LaunchSite
	last := 0
	for pos := 0; ; {
		k := strings.Index(code[pos:], "<<<")
		if k < 0 {
			break
		}
		lt := pos + k
		line := 1 + strings.Count(code[:lt], "\n")
		cs, name, targs, err := calleeBefore(code, lt)
		if err != nil {
			return "", nil, fmt.Errorf("line %d: %w", line, err)
		}
		gt := closeTriple(code, lt+3)
		if gt < 0 {
			return "", nil, fmt.Errorf("line %d: launch of %s: no matching >>>", line, name)
		}
		ao := gt + 3
		for ao < len(code) && isSpace(code[ao]) {
			ao++
		}
		if ao >= len(code) || code[ao] != '(' {
			return "", nil, fmt.Errorf("line %d: launch of %s: no argument list after >>>", line, name)
		}
		ac := matchForward(code, ao, '(', ')')
		if ac < 0 {
			return "", nil, fmt.Errorf("line %d: launch of %s: unbalanced argument list", line, name)
		}
		if cs < last {
			return "", nil, fmt.Errorf("line %d: nested launch", line)
		}
		callee := src[cs:lt]
		cfg := src[lt+3 : gt]
		args := src[ao+1 : ac]
		var ta []string
		for _, a := range targs {
			ta = append(ta, "::cudaemu::host::targ<"+strings.TrimSpace(a)+">()")
		}
		b.WriteString(src[last:cs])
		site := fmt.Sprintf("CUDAEMU_SITE(%s, %s)", cQuote(name), cQuote(table.encode(name)))
		if _, known := table[name]; !known && len(targs) == 0 {
			// Not a kernel's name: a function-pointer variable (a runtime
			// choice of instance); the launch names it from its symbol.
			site = fmt.Sprintf("CUDAEMU_SITE_FN(%s, \"\", %s)", cQuote(name), oneLine(callee))
		}
		fmt.Fprintf(&b, "::cudaemu::host::launch(%s, {%s}, ::cudaemu::host::Config(%s), [&](auto&&... cudaemu_a) { %s(cudaemu_a...); }",
			site, strings.Join(ta, ", "), cfg, oneLine(callee))
		if strings.TrimSpace(emulator.BlankCommentsAndStrings(args)) != "" {
			b.WriteString(", ")
			b.WriteString(args)
		}
		b.WriteString(")")
		b.WriteString(strings.Repeat("\n", strings.Count(callee, "\n")+strings.Count(src[gt:ao], "\n")))
		last = ac + 1
		pos = ac + 1
		sites = append(sites, LaunchSite{Kernel: name, Line: line})
	}
	b.WriteString(src[last:])
	return b.String(), sites, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\\' }

// closeTriple finds the `>>>` closing a launch configuration that starts at
// i, outside parentheses.
func closeTriple(code string, i int) int {
	depth := 0
	for ; i+2 < len(code); i++ {
		switch code[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '>':
			if depth == 0 && code[i+1] == '>' && code[i+2] == '>' {
				return i
			}
		}
	}
	return -1
}

// calleeBefore reads the launched expression ending at lt: a (qualified)
// name with optional template arguments, or a parenthesised expression. It
// returns its start, the kernel name and the template arguments.
func calleeBefore(code string, lt int) (int, string, []string, error) {
	i := lt - 1
	for i >= 0 && isSpace(code[i]) {
		i--
	}
	if i < 0 {
		return 0, "", nil, fmt.Errorf("launch with no kernel before <<<")
	}
	var targs []string
	if code[i] == ')' {
		depth := 0
		j := i
		for ; j >= 0; j-- {
			if code[j] == ')' {
				depth++
			} else if code[j] == '(' {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		if j < 0 {
			return 0, "", nil, fmt.Errorf("unbalanced parentheses before <<<")
		}
		inner := code[j+1 : i]
		name := lastIdent(stripTemplateArgs(inner))
		return j, name, nil, nil
	}
	end := i + 1
	if code[i] == '>' {
		depth := 0
		j := i
		for ; j >= 0; j-- {
			switch code[j] {
			case '>':
				depth++
			case '<':
				depth--
			}
			if depth == 0 {
				break
			}
		}
		if j < 0 {
			return 0, "", nil, fmt.Errorf("unbalanced template arguments before <<<")
		}
		targs = splitTop(code[j+1 : i])
		i = j - 1
		for i >= 0 && isSpace(code[i]) {
			i--
		}
	}
	// A qualified name: identifiers joined by "::" (a lone ':' ends it, as
	// in `case 256: kernel<256><<<...>>>`).
	j := i
	for {
		for j >= 0 && isIdent(code[j]) {
			j--
		}
		k := j
		for k >= 0 && code[k] == ' ' {
			k--
		}
		if k >= 1 && code[k] == ':' && code[k-1] == ':' {
			j = k - 2
			for j >= 0 && code[j] == ' ' {
				j--
			}
			continue
		}
		break
	}
	start := j + 1
	qual := strings.TrimSpace(code[start : i+1])
	name := lastIdent(qual)
	if name == "" {
		return 0, "", nil, fmt.Errorf("cannot read the kernel name before <<<")
	}
	_ = end
	return start, name, targs, nil
}

func stripTemplateArgs(s string) string {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<':
			depth++
		case '>':
			depth--
		default:
			if depth == 0 {
				b.WriteByte(s[i])
			}
		}
	}
	return b.String()
}

func lastIdent(s string) string {
	m := identEnd.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return ""
	}
	return m[1]
}

func isIdent(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}
