package kit

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Import time. Code that runs when a module is imported must not build a
// TorchTPU device: torch.device("tpu"), a tensor or a move to "tpu" raises
// wherever TorchTPU has no chip (a CPU or CUDA host, torch_tpu installed or
// not), so importing the module, and collecting the tests that import it,
// would fail there. The tpu target therefore writes the portable form (the
// module's DEVICE, pallasify_device() in a library module: the TPU where
// there is one, found on first use there) at the sites ImportTime reports,
// and "tpu" everywhere else. lazyDefault (transforms/device) moves a library
// default out of import time by the same test.

// ImportTimeDoc is the sentence of the rule pages whose tpu fix builds a
// device, a tensor or a move (see ImportTime).
const ImportTimeDoc = "On the tpu target, code that runs when the module is imported (module-level statements, " +
	"also inside a module-level `if`/`try`/`with`; class bodies; decorators and their arguments such as " +
	"`pytest.param(...)`; default values; annotations unless `from __future__ import annotations`; and the bodies " +
	"of the module's functions called there) gets the portable form instead of `\"tpu\"`: `DEVICE`, " +
	"`pallasify_device()` in a library module, `device_at(i)` for an index. `torch.device(\"tpu\")` raises on every " +
	"host where TorchTPU has no chip, torch_tpu installed or not, so the module would no longer import there and " +
	"its tests would no longer collect; the portable form is the TPU on a TPU host. Function bodies and the " +
	"`if __name__ == \"__main__\":` block keep `\"tpu\"`."

// ImportTimeNote ends the message of a tpu-target site written in the
// portable form because it runs on import.
const ImportTimeNote = "; it runs when the module is imported, so it names the device found on this host " +
	"(the TPU where there is one): torch.device(\"tpu\") there would make the import fail on every host without a TPU"

// ImportTime reports whether n is evaluated when its module is imported:
// anything at module level (inside module-level if, try, with and loops
// too), class bodies, decorators and their arguments, default values (of
// lambdas too), annotations unless the module has `from __future__ import
// annotations`, and the bodies of the module's own functions that run on
// import (see importCalled). Function and lambda bodies otherwise run when
// called, and the block of a module-level `if __name__ == "__main__":` runs
// only when the file is run as a program. Nothing in a notebook runs on
// import: a notebook is run, never imported.
func ImportTime(p *rule.Pass, n *ts.Node) bool {
	if strings.HasSuffix(p.Path, ".ipynb") {
		return false // a notebook is run, cell by cell, never imported
	}
	for c := n; ; {
		par := c.Parent()
		if par == nil {
			return true
		}
		switch par.Type() {
		case "function_definition":
			if IsField(par, "body", c) {
				return importCalled(p)[Start(par)]
			}
			if IsField(par, "return_type", c) && futureAnnotations(p) {
				return false
			}
		case "lambda":
			if IsField(par, "body", c) {
				return false
			}
		case "typed_parameter", "typed_default_parameter", "assignment":
			if IsField(par, "type", c) && futureAnnotations(p) {
				return false
			}
		case "if_statement":
			if IsField(par, "consequence", c) && mainGuard(p, par) {
				return false
			}
		}
		c = par
	}
}

// IsField reports whether c is par's child in field.
func IsField(par *ts.Node, field string, c *ts.Node) bool {
	f := par.ChildByFieldName(field)
	return f != nil && f.Equal(c)
}

// mainGuard reports whether n is a module-level `if __name__ == "__main__":`.
func mainGuard(p *rule.Pass, n *ts.Node) bool {
	if par := n.Parent(); par == nil || par.Type() != "module" {
		return false
	}
	cond := p.Text(n.ChildByFieldName("condition"))
	return strings.Contains(cond, "__name__") && strings.Contains(cond, "__main__")
}

// futureAnnotations reports whether the module defers its annotations
// (`from __future__ import annotations`): they are then never evaluated.
func futureAnnotations(p *rule.Pass) bool {
	return p.Memo("kit.futureAnnotations", func() any {
		root := p.Tree.Root()
		for i := 0; i < int(root.NamedChildCount()); i++ {
			c := root.NamedChild(i)
			if c.Type() != "future_import_statement" {
				continue
			}
			for _, name := range ts.Children(c) {
				if p.Text(name) == "annotations" {
					return true
				}
			}
		}
		return false
	}).(bool)
}

// importCalled is the set (by start offset) of the function definitions
// whose bodies may run on import, found conservatively: a module-level
// function called by name, or used as a decorator, where code runs on
// import; a module-level class instantiated there (its __init__, __new__ and
// __post_init__) or one of its methods called through the class name
// (Cls.build()) or through self in such a body; and every function defined
// inside such a body (a decorator's wrapper may be called on import too).
// Calls through other objects are not followed.
func importCalled(p *rule.Pass) map[int]bool {
	return p.Memo("kit.importCalled", func() any {
		s := importScan{p: p, f: p.Tree.Flat(), defs: map[string][]method{}, called: map[int]bool{}}
		s.collect()
		s.region(0, 0, "")
		for len(s.queue) > 0 {
			r := s.queue[0]
			s.queue = s.queue[1:]
			s.region(r.body+1, int(s.f.Next[r.body]), r.cls)
		}
		return s.called
	}).(map[int]bool)
}

// importScan is the state of importCalled.
type importScan struct {
	p      *rule.Pass
	f      *ts.Flat
	defs   map[string][]method // callable name ("f", "Cls", "Cls.meth") -> the function definitions it runs
	called map[int]bool
	queue  []calledBody
}

// method is a function definition (its index) and the class it belongs to
// ("" for a module-level function).
type method struct {
	def int
	cls string
}

// calledBody is the body of a function that runs on import, and the class
// it is a method of ("" for none).
type calledBody struct {
	body int
	cls  string
}

// collect records the module-level functions and classes (those not inside
// a function or class body).
func (s *importScan) collect() {
	f := s.f
	f.Walk(func(i int) bool {
		switch f.Types[i] {
		case "function_definition":
			if name := f.Child(i, "name"); name >= 0 {
				n := s.p.Text(f.Nodes[name])
				s.defs[n] = append(s.defs[n], method{def: i})
			}
			return false
		case "class_definition":
			name, body := f.Child(i, "name"), f.Child(i, "body")
			if name < 0 || body < 0 {
				return false
			}
			cls := s.p.Text(f.Nodes[name])
			for j, end := body+1, int(f.Next[body]); j < end; j = int(f.Next[j]) {
				def := j
				if f.Types[j] == "decorated_definition" {
					def = f.Child(j, "definition")
				}
				if def < 0 || f.Types[def] != "function_definition" {
					continue
				}
				m := s.p.Text(f.Nodes[f.Child(def, "name")])
				s.defs[cls+"."+m] = append(s.defs[cls+"."+m], method{def: def, cls: cls})
				if m == "__init__" || m == "__new__" || m == "__post_init__" {
					s.defs[cls] = append(s.defs[cls], method{def: def, cls: cls})
				}
			}
			return false
		}
		return true
	})
}

// region scans the nodes [start, end) that run on import (the module when
// start is 0, else a called function's body, a method of cls when cls is
// set) for the calls that run more of the module's functions.
func (s *importScan) region(start, end int, cls string) {
	f := s.f
	if start == 0 {
		end = len(f.Nodes)
	}
	for i := start; i < end; {
		if s.deferred(i, start > 0, cls) {
			i = int(f.Next[i])
			continue
		}
		switch f.Types[i] {
		case "call":
			if fn := f.Child(i, "function"); fn >= 0 {
				name := s.p.Text(f.Nodes[fn])
				if cls != "" && strings.HasPrefix(name, "self.") {
					name = cls + name[len("self"):]
				}
				s.mark(name)
			}
		case "decorator":
			s.mark(strings.TrimSpace(strings.TrimPrefix(s.p.Text(f.Nodes[i]), "@")))
		}
		i++
	}
}

// deferred reports whether node i is a body that does not run where it is
// written: a function body (in a called body, that function is marked as
// called: it may run on import), a lambda body, the block of a main guard.
func (s *importScan) deferred(i int, inCalled bool, cls string) bool {
	f := s.f
	par := f.Parent(i)
	if par < 0 {
		return false
	}
	switch f.Types[par] {
	case "function_definition":
		if f.Child(par, "body") != i {
			return false
		}
		if inCalled {
			s.markDef(par, cls)
		}
		return true
	case "lambda":
		return f.Child(par, "body") == i
	case "if_statement":
		return f.Child(par, "consequence") == i && mainGuard(s.p, f.Nodes[par])
	}
	return false
}

// mark records the module's functions that a call of name runs.
func (s *importScan) mark(name string) {
	for _, m := range s.defs[name] {
		s.markDef(m.def, m.cls)
	}
}

// markDef records function definition d (a method of cls when cls is set)
// as running on import and queues its body.
func (s *importScan) markDef(d int, cls string) {
	k := Start(s.f.Nodes[d])
	if s.called[k] {
		return
	}
	s.called[k] = true
	if body := s.f.Child(d, "body"); body >= 0 {
		s.queue = append(s.queue, calledBody{body: body, cls: cls})
	}
}
