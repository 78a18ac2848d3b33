package pallas

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// sequences joins the plans of kernels one host function launches in
// sequence (mmcv's softmax focal loss backward: cuda1 writes buff, cuda2
// reads it and writes grad_input) into one op: the plan of the first
// kernel carries every stage, in launch order, and the TPU path runs
// their JAX functions in that order, each on the buffers the one before
// wrote. A sequence is wired only when every kernel it launches is proven
// and planned, each is launched once and every buffer is a tensor the
// caller passes (written in place, copied back at the end); otherwise
// each of its kernels is refused, saying why.
func (w *wiring) sequences(failed map[string]string) {
	groups := map[string][]*plan{}
	var order []string
	var kept []*plan
	for _, p := range w.plans {
		if len(p.launches) < 2 {
			kept = append(kept, p)
			continue
		}
		if _, ok := groups[p.launcher]; !ok {
			order = append(order, p.launcher)
		}
		groups[p.launcher] = append(groups[p.launcher], p)
	}
	for _, key := range order {
		var lead *plan
		var err error
		if groups[key][0].branch != nil {
			lead, err = alternativesOf(groups[key], failed)
		} else {
			lead, err = sequenceOf(groups[key], failed)
		}
		if err != nil {
			for _, p := range groups[key] {
				w.problem(p, p.wk.Kernel.Path, err.Error())
			}
			continue
		}
		kept = append(kept, lead)
	}
	w.plans = kept
}

// sequenceOf checks one host function's plans and returns the first
// launch's plan carrying them all as its stages.
func sequenceOf(ps []*plan, failed map[string]string) (*plan, error) {
	first := ps[0]
	host, names := first.host.name, first.launches
	intro := fmt.Sprintf("%s launches %s in sequence", host, strings.Join(names, ", "))
	var stages []*plan
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			return nil, fmt.Errorf("%s: %s is launched twice", intro, n)
		}
		j := slices.IndexFunc(ps, func(p *plan) bool { return p.wk.Kernel.Name == n })
		if j < 0 {
			if why, ok := failed[n]; ok {
				return nil, fmt.Errorf("%s: %s is proven but not wired: %s", intro, n, why)
			}
			return nil, fmt.Errorf("%s: %s is not proven, so the op is not", intro, n)
		}
		stages = append(stages, ps[j])
	}
	used := map[int]bool{}
	for _, s := range stages {
		switch {
		case len(s.host.returns) > 0:
			return nil, fmt.Errorf("%s and returns %s: the buffers between the launches are not plain", intro,
				strings.Join(s.host.returns, ", "))
		case len(s.outShape) > 0 || len(s.inplace) == 0:
			return nil, fmt.Errorf("%s: %s writes a buffer %s allocates, not a tensor its caller passes", intro,
				s.wk.Kernel.Name, host)
		case !slices.Equal(s.paramNames(allIndexes(len(s.host.params))), first.paramNames(allIndexes(len(first.host.params)))) ||
			s.pyname != first.pyname || s.ns != first.ns || len(s.sites) != len(first.sites):
			return nil, fmt.Errorf("%s: its kernels are not bound to one Python function", intro)
		}
		for _, a := range s.host.args {
			if a.param >= 0 && s.host.params[a.param].tensor {
				used[a.param] = true
			}
		}
	}
	for _, i := range first.tensors {
		if !used[i] {
			return nil, fmt.Errorf("%s: tensor %s reaches none of them", intro, first.host.params[i].name)
		}
	}
	lead := first
	if stages[0] != first {
		lead = stages[0]
	}
	var inplace []int
	for _, s := range stages {
		s.stageJax = sanitize(s.wk.Kernel.Name) + "_jax"
		for _, i := range s.inplace {
			if !slices.Contains(inplace, i) {
				inplace = append(inplace, i)
			}
		}
	}
	lead.stages, lead.written = stages, inplace
	return lead, nil
}

// alternativesOf checks one host function's plans for kernels it launches
// under if (cond) A else B and returns the plan carrying them: the TPU path
// tests cond as the host does and runs A's op or B's. An alternative whose
// kernel is not proven (or not planned) raises on the TPU path, naming it:
// the original CUDA path cannot run tpu tensors, so there is nothing to
// fall back to. Both alternatives must write the same caller tensors.
func alternativesOf(ps []*plan, failed map[string]string) (*plan, error) {
	first := ps[0]
	names := first.launches
	intro := fmt.Sprintf("%s launches %s if %s, else %s", first.host.name, names[0], first.branch.cond, names[1])
	var stages []*plan
	for _, n := range names {
		if j := slices.IndexFunc(ps, func(p *plan) bool { return p.wk.Kernel.Name == n }); j >= 0 {
			stages = append(stages, ps[j])
		}
	}
	for _, s := range stages {
		switch {
		case s.branch == nil || s.branch.cond != first.branch.cond:
			return nil, fmt.Errorf("%s: the kernels are not under one condition", intro)
		case len(s.host.returns) > 0 || len(s.outShape) > 0:
			return nil, fmt.Errorf("%s and allocates its outputs: only in-place writes into caller tensors are wired", intro)
		case !slices.Equal(s.paramNames(s.inplace), stages[0].paramNames(stages[0].inplace)) ||
			!slices.Equal(s.paramNames(allIndexes(len(s.host.params))), first.paramNames(allIndexes(len(first.host.params)))) ||
			s.pyname != first.pyname || s.ns != first.ns || len(s.sites) != len(first.sites):
			return nil, fmt.Errorf("%s: the alternatives do not write the same tensors of one Python function", intro)
		}
	}
	lead := &plan{}
	*lead = *stages[0]
	if len(stages) < len(names) {
		for _, n := range names {
			if !slices.ContainsFunc(stages, func(p *plan) bool { return p.wk.Kernel.Name == n }) {
				lead.missing = n
				lead.why = "not proven"
				if why, ok := failed[n]; ok {
					lead.why = "proven but not wired: " + why
				}
			}
		}
	}
	for _, s := range stages {
		s.stageJax = sanitize(s.wk.Kernel.Name) + "_jax"
	}
	lead.stages, lead.written = stages, stages[0].inplace
	return lead, nil
}

// jaxName is the name of the JAX function p's module defines.
func (p *plan) jaxName() string {
	if p.stageJax != "" {
		return p.stageJax
	}
	return p.entry + "_jax"
}

// modules are the plans whose kernel modules p's op uses: its stages, or
// itself.
func (p *plan) modules() []*plan {
	if len(p.stages) > 0 {
		return p.stages
	}
	return []*plan{p}
}

// sequenceFunc is the body lines, inside <entry>_op, of the JAX function a
// sequence's op registers: each stage's JAX function in launch order over
// the host's arguments, a buffer a stage writes passed on to the next
// ones as the host passes the same tensor, and every written buffer
// returned in the op's order.
func (p *plan) sequenceFunc(name string) []string {
	args := append(p.paramNames(p.tensors), p.paramNames(p.static)...)
	// jax_op reads the signature: every argument and the result annotated
	var sig []string
	for _, i := range p.tensors {
		sig = append(sig, p.host.params[i].name+": jax.Array")
	}
	for _, i := range p.static {
		sig = append(sig, p.host.params[i].name+": "+pyScalarType(p.host.params[i].ctype))
	}
	ret := "jax.Array"
	if n := len(p.writes()); n > 1 {
		ret = "tuple[" + strings.TrimSuffix(strings.Repeat("jax.Array, ", n), ", ") + "]"
	}
	lines := []string{"import jax", "", "def " + name + "(" + strings.Join(sig, ", ") + ") -> " + ret + ":",
		"    # the host's launches, in order: a buffer one writes is what the next ones read"}
	for i, s := range p.stages {
		targets := s.paramNames(s.inplace)
		lhs := strings.Join(targets, ", ")
		if len(targets) > 1 {
			lhs = "(" + lhs + ")"
		}
		lines = append(lines, strings.Split(pyCall("    ", lhs+" = "+fmt.Sprintf("kernel%d.%s", i, s.jaxName()), args), "\n")...)
	}
	lines = append(lines, "    return "+strings.Join(p.paramNames(p.writes()), ", "))
	return lines
}

// writes are the host parameters p's op writes in place: every stage's, for
// a sequence.
func (p *plan) writes() []int {
	if len(p.stages) > 0 {
		return p.written
	}
	return p.inplace
}

// kernelNames names p's kernel, or a sequence's kernels in launch order.
func (p *plan) kernelNames() string {
	if len(p.stages) == 0 {
		return "kernel " + p.wk.Kernel.Name
	}
	var names []string
	for _, s := range p.stages {
		names = append(names, s.wk.Kernel.Name)
	}
	return "kernels " + strings.Join(names, ", ") + " (in launch order)"
}

// alternativesPart is the ops module's part for kernels launched under a
// host if/else: each proven alternative's op (<entry>_<kernel>_op) and
// <entry>, which tests the host's condition and runs the op of the kernel
// the host would launch, writing its result in place; an alternative that
// is not proven raises, naming its kernel.
func (p *plan) alternativesPart(ns string, pkg bool) string {
	var b strings.Builder
	tpuArgs := append(p.paramNames(p.tensors), p.paramNames(p.static)...)
	written := p.paramNames(p.writes())
	run := map[string][]string{}
	for _, s := range p.stages {
		s.entry = p.entry + "_" + sanitize(s.wk.Kernel.Name)
		b.WriteString(s.opFunc(ns, pkg, nil).render())
		call := fmt.Sprintf("%s_op()(%s)", s.entry, strings.Join(tpuArgs, ", "))
		if len(written) == 1 {
			run[s.wk.Kernel.Name] = []string{written[0] + ".copy_(" + call + ")"}
			continue
		}
		var news []string
		for _, n := range written {
			news = append(news, n+"_new")
		}
		lines := []string{strings.Join(news, ", ") + " = " + call}
		for i, n := range written {
			lines = append(lines, n+".copy_("+news[i]+")")
		}
		run[s.wk.Kernel.Name] = lines
	}
	if p.missing != "" {
		msg := fmt.Sprintf("%s on tpu: the host launches %s here, and it is %s; the original CUDA op cannot run tpu tensors",
			p.pyname, p.missing, p.why)
		run[p.missing] = []string{pyCall("", "raise NotImplementedError", []string{pyStr(msg)})}
	}
	body := []string{"if " + p.branch.cond + ":"}
	for _, l := range run[p.launches[0]] {
		body = append(body, "    "+l)
	}
	body = append(body, "else:")
	for _, l := range run[p.launches[1]] {
		body = append(body, "    "+l)
	}
	doc := fmt.Sprintf(`%s for tensors on "tpu": as the host code, %s runs if %s, else %s (proven Pallas kernels through `+
		`jax_op), the result written into %s in place, as the original op does.`, p.pyname, p.launches[0], p.branch.cond,
		p.launches[1], strings.Join(written, ", "))
	b.WriteString(pyFunc{name: p.entry, params: p.paramNames(allIndexes(len(p.host.params))), doc: doc, body: body}.render())
	return b.String()
}

// branchValue is a value of scalar parameter name for which the host's
// if/else launches p's kernel (psa_type != 0 for the else-part of
// psa_type == 0); false when name is not the condition's parameter.
func (p *plan) branchValue(name string) (float64, bool) {
	if p.branch == nil {
		return 0, false
	}
	m := reBranchCond.FindStringSubmatch(p.branch.cond)
	if m == nil || m[1] != name {
		return 0, false
	}
	lit, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return 0, false
	}
	holds := map[string][2]float64{ // a value where the condition holds, one where it does not
		"==": {lit, lit + 1}, "!=": {lit + 1, lit}, "<": {lit - 1, lit}, "<=": {lit, lit + 1},
		">": {lit + 1, lit}, ">=": {lit, lit - 1},
	}[m[2]]
	if p.branch.then {
		return holds[0], true
	}
	return holds[1], true
}
