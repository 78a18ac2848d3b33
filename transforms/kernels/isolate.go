package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Unit is the isolated translation unit of one __global__ kernel: the kernel
// and its closure (device functions, macros, constants, types, templates),
// original text in original order with the CUDA qualifiers in place, and an
// explicit instantiation when the kernel is a template.
type Unit struct {
	// Source is the standalone translation unit (no torch or pybind code).
	Source string `json:"source"`
	// Entry is the expression naming the kernel to launch, e.g. "k" or
	// "ns::k<float, 256>".
	Entry string `json:"entry"`
	// Pieces lists what the closure pulled in, "kind name" in TU order.
	Pieces []string `json:"pieces"`
	// Dropped lists includes left out (torch, pybind, CUDA runtime headers the
	// emulator provides).
	Dropped []string `json:"dropped,omitempty"`
	// Unsupported names constructs the TU needs but isolation cannot give it
	// (a host function called from device code, cooperative groups, ...).
	Unsupported []string `json:"unsupported,omitempty"`
	// Masked is what masking blanked in the kernel's own source file.
	Masked []Masked `json:"masked,omitempty"`
	// Hash is sha256 of Source, hex.
	Hash string `json:"hash"`
	// Original is the unit as isolated when Source was preprocessed (macros,
	// #if branches resolved with the emulator's defines), else "".
	Original string `json:"original,omitempty"`

	// A template kernel's parameter names and its explicit instantiation
	// (the line in Source, and what Reinstantiate rebuilds it from).
	templateParams []string
	inst           string
	instTargs      []string
	instRet        string
	instName       string
	instParams     string
}

// SetPreprocessed replaces Source by its preprocessed text (the drafters
// and the reference read it), keeping the isolated text in Original.
func (u *Unit) SetPreprocessed(src string) {
	if u.Original == "" {
		u.Original = u.Source
	}
	u.Source = src
	sum := sha256.Sum256([]byte(u.Source))
	u.Hash = hex.EncodeToString(sum[:])
}

// Reinstantiate changes a template kernel's explicit instantiation (and
// Entry) to targs, e.g. the template arguments of a captured launch.
func (u *Unit) Reinstantiate(targs []string) {
	if u.inst == "" || len(targs) != len(u.templateParams) || strings.Join(targs, ", ") == strings.Join(u.instTargs, ", ") {
		return
	}
	sub := map[string]string{}
	for i, p := range u.templateParams {
		sub[p] = targs[i]
	}
	inst := fmt.Sprintf("template __global__ %s %s<%s>%s;", u.instRet, u.instName, strings.Join(targs, ", "), substIdents(u.instParams, sub))
	u.Source = strings.Replace(u.Source, u.inst, inst, 1)
	u.Entry = strings.Replace(u.Entry, u.instName+"<"+strings.Join(u.instTargs, ", ")+">", u.instName+"<"+strings.Join(targs, ", ")+">", 1)
	u.inst, u.instTargs = inst, append([]string(nil), targs...)
	sum := sha256.Sum256([]byte(u.Source))
	u.Hash = hex.EncodeToString(sum[:])
}

// stdHeaders are C/C++ standard headers an isolated TU may keep.
var stdHeaders = map[string]bool{
	"cmath": true, "math.h": true, "cstdint": true, "stdint.h": true, "cfloat": true, "float.h": true,
	"climits": true, "limits.h": true, "limits": true, "type_traits": true, "cstddef": true, "stddef.h": true,
	"algorithm": true, "utility": true, "cstdio": true, "stdio.h": true, "cassert": true, "assert.h": true,
	"array": true, "cstring": true, "string.h": true, "numeric": true, "cstdlib": true, "stdlib.h": true,
	"tuple": true, "initializer_list": true,
}

// droppedHeader reports whether a system include is left out of the TU
// (provided by the emulator or host-only).
func droppedHeader(path string) bool { return !stdHeaders[path] }

// unsupportedHeaders map include paths to the construct they bring.
var unsupportedHeaders = map[string]string{
	"cooperative_groups.h": "cooperative_groups", "cub/cub.cuh": "cub", "mma.h": "wmma", "thrust": "thrust",
	"cuda/pipeline": "cuda::pipeline", "cuda/barrier": "cuda::barrier",
}

func deviceUsable(it *item) bool {
	switch it.kind {
	case itemDevice, itemConstFn, itemMacro, itemType, itemDevVar, itemConstVar:
		return true
	case itemProto:
		return hasQual(it.quals, "__device__")
	}
	return false
}

// isolate builds the TU for kernel k from the flattened item list of its
// source (local headers already spliced in at their include points).
func isolate(k *item, items []*item, targs []string) *Unit {
	defs := map[string][]*item{}
	for _, it := range items {
		if it == k || !deviceUsable(it) && it.kind != itemKernel && it.kind != itemHostFn {
			continue
		}
		for _, nm := range it.names {
			defs[nm] = append(defs[nm], it)
		}
	}
	u := &Unit{}
	need := map[*item]bool{k: true}
	queue := []*item{k}
	spec := k.template != nil && len(templateParams(k.file, k.template)) == 0
	if p := primaryOf(k, items); spec && p != nil {
		// an explicit specialisation (template <> __global__ void k<at::Half>)
		// compiles only after its primary template
		need[p] = true
		queue = append(queue, p)
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		refs := make([]string, 0, len(it.refs))
		for r := range it.refs {
			refs = append(refs, r)
		}
		sort.Strings(refs)
		for _, r := range refs {
			for _, d := range defs[r] {
				if need[d] {
					continue
				}
				switch {
				case d.kind == itemKernel:
					if it.kind != itemMacro {
						u.Unsupported = appendUniq(u.Unsupported, "launches kernel "+r+" from device code")
					}
					continue
				case d.kind == itemHostFn:
					if hasOtherDef(defs[r]) {
						continue
					}
					u.Unsupported = appendUniq(u.Unsupported, "calls host function "+r)
					continue
				}
				need[d] = true
				queue = append(queue, d)
			}
		}
	}
	text := func(it *item) string { return string(it.file.src[it.start:it.end]) }
	var b strings.Builder
	fmt.Fprintf(&b, "// pallasify: isolated kernel %s from %s:%d\n", k.names[0], k.file.path, kernelLine(k))
	seenInc := map[string]bool{}
	for _, it := range items {
		if it.kind != itemInclude || !it.system {
			continue
		}
		if c, ok := unsupportedHeaders[it.include]; ok {
			for _, x := range items {
				if need[x] && (x.refs["cg"] || x.refs["cooperative_groups"] || x.refs["cub"] || x.refs["wmma"] || x.refs["thrust"] || x.refs["pipeline"]) {
					u.Unsupported = appendUniq(u.Unsupported, c)
					break
				}
			}
		}
		if droppedHeader(it.include) {
			u.Dropped = appendUniq(u.Dropped, it.include)
			continue
		}
		if !seenInc[it.include] {
			seenInc[it.include] = true
			fmt.Fprintf(&b, "#include <%s>\n", it.include)
		}
	}
	for _, it := range items {
		if it.kind == itemUsing && !strings.Contains(text(it), "torch") && !strings.Contains(text(it), "at::") && !strings.Contains(text(it), "c10") && !strings.Contains(text(it), "pybind") {
			need[it] = true
		}
	}
	var stack []wrapper
	for _, it := range items {
		if !need[it] {
			continue
		}
		stack = switchWrappers(&b, stack, it.wrappers)
		b.WriteString(text(it))
		b.WriteString("\n")
		name := ""
		if len(it.names) > 0 {
			name = it.names[0]
		}
		u.Pieces = append(u.Pieces, it.kind+" "+name)
	}
	u.Entry = k.names[0]
	if spec {
		u.Entry += "<" + strings.Join(specializationArgs(k.file, k), ", ") + ">" // its own definition: no instantiation
	} else if k.template != nil {
		inst := instantiation(k, targs)
		u.inst, u.instTargs, u.instName = inst, append([]string(nil), targs...), k.names[0]
		u.instRet, u.instParams = instantiationParts(k)
		for _, tp := range templateParams(k.file, k.template) {
			u.templateParams = append(u.templateParams, tp.name)
		}
		b.WriteString(inst)
		b.WriteString("\n")
		u.Entry += "<" + strings.Join(targs, ", ") + ">"
	}
	switchWrappers(&b, stack, nil)
	var qual []string
	for _, w := range k.wrappers {
		if strings.HasPrefix(w.open, "namespace ") && w.open != "namespace {" {
			qual = append(qual, strings.TrimSuffix(strings.TrimPrefix(w.open, "namespace "), " {"))
		}
	}
	if len(qual) > 0 {
		u.Entry = strings.Join(qual, "::") + "::" + u.Entry
		// the wrapper may name the kernel unqualified (the spec holds its
		// plain name): bring it into the global namespace
		fmt.Fprintf(&b, "using %s::%s;\n", strings.Join(qual, "::"), k.names[0])
	}
	u.Source = b.String()
	u.Masked = k.file.marks
	sum := sha256.Sum256([]byte(u.Source))
	u.Hash = hex.EncodeToString(sum[:])
	return u
}

// primaryOf is the primary template an explicit specialisation k
// specialises: the kernel template of the same name with parameters.
func primaryOf(k *item, items []*item) *item {
	for _, it := range items {
		if it != k && it.kind == itemKernel && it.template != nil && len(it.names) > 0 && len(k.names) > 0 &&
			it.names[0] == k.names[0] && len(templateParams(it.file, it.template)) > 0 {
			return it
		}
	}
	return nil
}

func hasOtherDef(ds []*item) bool {
	for _, d := range ds {
		if deviceUsable(d) {
			return true
		}
	}
	return false
}

func switchWrappers(b *strings.Builder, cur, want []wrapper) []wrapper {
	common := 0
	for common < len(cur) && common < len(want) && cur[common].key == want[common].key {
		common++
	}
	for i := len(cur) - 1; i >= common; i-- {
		b.WriteString(cur[i].close + "\n")
	}
	for i := common; i < len(want); i++ {
		b.WriteString(want[i].open + "\n")
	}
	return want
}

func appendUniq(xs []string, ss ...string) []string {
	for _, s := range ss {
		xs = appendOne(xs, s)
	}
	return xs
}

func appendOne(xs []string, s string) []string {
	for _, x := range xs {
		if x == s {
			return xs
		}
	}
	return append(xs, s)
}

// instantiation returns an explicit instantiation of template kernel k for
// targs, with the template parameters substituted in the parameter list.
func instantiation(k *item, targs []string) string {
	f := k.file
	tps := templateParams(f, k.template)
	sub := map[string]string{}
	for i, p := range tps {
		if i < len(targs) {
			sub[p.name] = targs[i]
		}
	}
	ret, params := instantiationParts(k)
	return fmt.Sprintf("template __global__ %s %s<%s>%s;", ret, k.names[0], strings.Join(targs, ", "), substIdents(params, sub))
}

// instantiationParts is a template kernel's return type and parameter list
// (template parameters unsubstituted, defaults stripped).
func instantiationParts(k *item) (ret, params string) {
	f := k.file
	decl := k.node.ChildByFieldName("declarator")
	for decl != nil && decl.Type() != "function_declarator" {
		decl = decl.ChildByFieldName("declarator")
	}
	params = "()"
	if decl != nil {
		if pl := decl.ChildByFieldName("parameters"); pl != nil {
			params = f.text(pl)
		}
	}
	params = stripDefaults(params)
	ret = "void"
	if t := k.node.ChildByFieldName("type"); t != nil {
		ret = f.text(t)
	}
	return ret, params
}

var defaultArgRE = regexp.MustCompile(`\s*=\s*[^,()]+`)

func stripDefaults(params string) string { return defaultArgRE.ReplaceAllString(params, "") }

// substIdents replaces whole identifiers by sub.
func substIdents(s string, sub map[string]string) string {
	if len(sub) == 0 {
		return s
	}
	return identRE.ReplaceAllStringFunc(s, func(id string) string {
		if r, ok := sub[id]; ok {
			return r
		}
		return id
	})
}

// kernelLine is the line of the kernel's __global__ keyword.
func kernelLine(k *item) int {
	for _, m := range k.file.marks {
		if m.Kind == "__global__" && m.Start >= k.start && m.End <= k.end {
			return k.file.line(m.Start)
		}
	}
	return k.file.line(k.start)
}
