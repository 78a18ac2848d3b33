package kit

import (
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Through is Callee and Arguments of a call, seen through functools.partial:
// for `partial(torch.autocast, "cuda", dtype=d)` the callee is
// torch.autocast and the arguments are ("cuda", dtype=d), the ones partial
// binds (the list's Lead is the callee, so insertions into it land after
// the callee). partial is true in that case. For any other call it is
// Callee and Arguments.
func Through(p *rule.Pass, call *ts.Node) (fn *ts.Node, q string, al ArgList, partial, ok bool) {
	fn, q = Callee(p, call)
	al, ok = Arguments(p, call)
	if !ok || q != "functools.partial" || len(al.All) == 0 || len(al.Positional) == 0 || !al.All[0].Equal(al.Positional[0]) {
		return fn, q, al, false, ok
	}
	fn = al.Positional[0]
	q = Qualified(p, fn)
	al.Lead = fn
	al.Positional = al.Positional[1:]
	al.All = al.All[1:]
	return fn, q, al, true, true
}
