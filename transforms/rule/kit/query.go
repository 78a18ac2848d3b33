package kit

import (
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Calls calls fn for every call node in the tree, in source order. Strings and
// comments are never entered.
func Calls(p *rule.Pass, fn func(call *ts.Node)) {
	ix := p.Tree.Index()
	for i, n := range ix.Nodes {
		if ix.Types[i] == "call" {
			if i%256 == 0 && p.Cancelled() {
				return
			}
			fn(n)
		}
	}
}

// Nodes calls fn for every node of type typ, in source order, without
// entering strings or comments (so never for a string or a comment).
func Nodes(p *rule.Pass, typ string, fn func(n *ts.Node)) {
	if ts.Indexed(typ) {
		ix := p.Tree.Index()
		for i, n := range ix.Nodes {
			if ix.Types[i] == typ {
				if i%256 == 0 && p.Cancelled() {
					return
				}
				fn(n)
			}
		}
		return
	}
	f := p.Tree.Flat()
	for i := 0; i < len(f.Nodes); {
		if i%1024 == 0 && p.Cancelled() {
			return
		}
		switch t := f.Types[i]; {
		case t == "string" || t == "comment":
			// Entered only when looking for that very type, whose node
			// itself is not reported (as before).
			if t != typ {
				i = int(f.Next[i])
				continue
			}
		case t == typ:
			fn(f.Nodes[i])
		}
		i++
	}
}

// Qualified is Qualify of n's dotted text: "nn.Module" -> "torch.nn.Module",
// "" when n is not a dotted name or its head is neither imported nor torch.
func Qualified(p *rule.Pass, n *ts.Node) string {
	return Qualify(p, Dotted(p, n))
}

// CallName is the qualified name of the function a call invokes ("" when it
// cannot be resolved through the imports).
func CallName(p *rule.Pass, call *ts.Node) string {
	return Qualified(p, p.Field(call, "function"))
}

// Kwarg returns the keyword_argument node called name in args, or nil.
func Kwarg(p *rule.Pass, args *ts.Node, name string) *ts.Node {
	if args == nil {
		return nil
	}
	for _, c := range ts.Children(args) {
		if c.Type() == "keyword_argument" && p.Text(c.ChildByFieldName("name")) == name {
			return c
		}
	}
	return nil
}

// KwargValue returns the value of keyword argument name, or nil.
func KwargValue(p *rule.Pass, args *ts.Node, name string) *ts.Node {
	if k := Kwarg(p, args, name); k != nil {
		return k.ChildByFieldName("value")
	}
	return nil
}

// Positional returns the positional arguments of args.
func Positional(args *ts.Node) []*ts.Node {
	var out []*ts.Node
	if args == nil {
		return out
	}
	for _, c := range ts.Children(args) {
		switch c.Type() {
		case "keyword_argument", "list_splat", "dictionary_splat", "comment":
			continue
		}
		out = append(out, c)
	}
	return out
}

// HasSplat reports whether args holds *args or **kwargs.
func HasSplat(args *ts.Node) bool {
	if args == nil {
		return false
	}
	for _, c := range ts.Children(args) {
		if c.Type() == "list_splat" || c.Type() == "dictionary_splat" {
			return true
		}
	}
	return false
}

// Int returns the value of an integer literal, allowing a leading minus.
func Int(p *rule.Pass, n *ts.Node) (int, bool) {
	if n == nil {
		return 0, false
	}
	switch n.Type() {
	case "integer":
		v, err := strconv.Atoi(strings.ReplaceAll(p.Text(n), "_", ""))
		return v, err == nil
	case "unary_operator":
		arg := n.ChildByFieldName("argument")
		if arg != nil && arg.Type() == "integer" && strings.HasPrefix(p.Text(n), "-") {
			v, err := strconv.Atoi(strings.ReplaceAll(p.Text(arg), "_", ""))
			return -v, err == nil
		}
	}
	return 0, false
}

// Bool returns the value of a True/False literal.
func Bool(n *ts.Node) (bool, bool) {
	if n == nil {
		return false, false
	}
	switch n.Type() {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// IsNone reports whether n is the None literal.
func IsNone(n *ts.Node) bool { return n != nil && n.Type() == "none" }

// CudaDevice reports whether s names a CUDA device ("cuda", "cuda:N") and
// returns the index (-1 when none).
func CudaDevice(s string) (int, bool) {
	if s == "cuda" {
		return -1, true
	}
	rest, ok := strings.CutPrefix(s, "cuda:")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 {
		return 0, false
	}
	return i, true
}

// DropKwarg returns the edit that removes keyword argument kw from args,
// together with the comma that separates it from its neighbour.
func DropKwarg(p *rule.Pass, args, kw *ts.Node) rule.Edit {
	kids := ts.Children(args)
	idx := -1
	for i, c := range kids {
		if c.Equal(kw) {
			idx = i
		}
	}
	src := p.Src
	// An argument alone on its line ("    kw=v,  # note"): remove the line,
	// keeping a trailing comment in place.
	ls := LineStart(src, Start(kw))
	le := LineEnd(src, End(kw))
	if strings.TrimSpace(string(src[ls:Start(kw)])) == "" && le > End(kw) && src[le-1] == '\n' {
		rest := strings.TrimSpace(string(src[End(kw) : le-1]))
		rest = strings.TrimSpace(strings.TrimPrefix(rest, ","))
		switch {
		case rest == "":
			return rule.Edit{Start: ls, End: le}
		case strings.HasPrefix(rest, "#") && strings.HasPrefix(strings.TrimSpace(string(src[End(kw):le-1])), ","):
			return rule.Edit{Start: ls, End: le, New: string(src[ls:Start(kw)]) + rest + "\n"}
		}
	}
	if idx > 0 {
		// Remove from the end of the previous argument to the end of kw.
		prev := kids[idx-1]
		if prev.Type() != "comment" {
			return rule.Edit{Start: End(prev), End: End(kw)}
		}
	}
	// First argument (or after a comment): remove kw, its comma and the
	// spaces that follow on the same line.
	e := End(kw)
	j := e
	for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
		j++
	}
	if j < len(src) && src[j] == ',' {
		j++
		for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
			j++
		}
		e = j
	}
	return rule.Edit{Start: Start(kw), End: e}
}

// AddKwargs returns the edits that append "k=v" texts to a call's argument
// list, keeping a trailing comma, one-argument-per-line layouts and a comment
// that follows the last argument on its line.
func AddKwargs(p *rule.Pass, args *ts.Node, kws []string) []rule.Edit {
	src := p.Src
	closeAt := End(args) - 1 // the ")"
	var last *ts.Node
	for _, c := range ts.Children(args) {
		if c.Type() != "comment" {
			last = c
		}
	}
	if last == nil {
		return []rule.Edit{{Start: closeAt, End: closeAt, New: strings.Join(kws, ", ")}}
	}
	between := string(src[End(last):closeAt])
	comma := -1
	if t := strings.TrimLeft(between, " \t\r\n\\"); strings.HasPrefix(t, ",") {
		comma = len(between) - len(t)
	}
	if !strings.Contains(between, "\n") {
		if comma >= 0 {
			at := End(last) + comma + 1
			return []rule.Edit{{Start: at, End: at, New: " " + strings.Join(kws, ", ") + ","}}
		}
		return []rule.Edit{{Start: End(last), End: End(last), New: ", " + strings.Join(kws, ", ")}}
	}
	// One argument per line, in the last argument's indent, after the line
	// that holds the last argument (and its comma and comment).
	indent := LineIndent(src, Start(last))
	from := End(last)
	if comma >= 0 {
		from += comma
	}
	at := closeAt
	if nl := strings.IndexByte(string(src[from:closeAt]), '\n'); nl >= 0 {
		at = from + nl
	}
	var b strings.Builder
	for _, k := range kws {
		b.WriteString("\n" + indent + k + ",")
	}
	ins := rule.Edit{Start: at, End: at, New: b.String()}
	if comma >= 0 {
		return []rule.Edit{ins}
	}
	return []rule.Edit{{Start: End(last), End: End(last), New: ","}, ins}
}

// LineEnd returns the offset just after the newline ending the line that
// holds off (or len(src)).
func LineEnd(src []byte, off int) int {
	for off < len(src) && src[off] != '\n' {
		off++
	}
	if off < len(src) {
		off++
	}
	return off
}

// EnclosingStatement returns the statement that contains n: its ancestor (or
// n itself) that is a child of a block or of the module; nil when there is
// none. Compare ExprStatement, which is only the expression statement made of
// exactly n.
func EnclosingStatement(n *ts.Node) *ts.Node {
	for x := n; x != nil; x = x.Parent() {
		p := x.Parent()
		if p == nil {
			return nil
		}
		if p.Type() == "block" || p.Type() == "module" {
			return x
		}
	}
	return nil
}

// InsideLambdaOrComprehension reports whether n is nested, below stop, in a
// lambda or a comprehension, where no statement can be inserted.
func InsideLambdaOrComprehension(n *ts.Node, stop *ts.Node) bool {
	for x := n.Parent(); x != nil && !x.Equal(stop); x = x.Parent() {
		switch x.Type() {
		case "lambda", "list_comprehension", "dictionary_comprehension", "set_comprehension", "generator_expression":
			return true
		}
	}
	return false
}

// UsesCompile reports whether the module calls or decorates with
// torch.compile anywhere.
func UsesCompile(p *rule.Pass) bool {
	ix := p.Tree.Index()
	for i, n := range ix.Nodes {
		switch ix.Types[i] {
		case "call":
			if CallName(p, n) == "torch.compile" {
				return true
			}
		case "decorator":
			for _, c := range ts.Children(n) {
				if Qualified(p, c) == "torch.compile" {
					return true
				}
			}
		}
	}
	return false
}

// Finding builds a finding spanning n.
func Finding(n *ts.Node, msg string, fix *rule.Fix) rule.Finding {
	return rule.Finding{Start: Start(n), End: End(n), Message: msg, Fix: fix}
}
