package kernels

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// ClassScatter is a kernel whose threads of several blocks update shared
// output elements through atomics (a scatter-add such as a backward of a
// gather): no thread owns an output element, so neither the elementwise nor
// the row template fits.
const ClassScatter = "scatter"

// Behaviour is what a kernel's captured launches showed about its accesses.
type Behaviour struct {
	Threads, Blocks, BlockThreads int64
	// Outputs are the written buffers: elements and elements changed.
	Outputs []OutputWrite
	// Atomics, Cooperates: the unit updates memory atomically; the block's
	// threads exchange values (barriers, warp shuffles).
	Atomics, Cooperates bool
}

// OutputWrite is one written buffer of a launch.
type OutputWrite struct {
	Name              string
	Elements, Changed int64
}

// ClassFromBehaviour classes a captured kernel by what its launches did
// rather than by what its source looks like: each output element written by
// one thread of a grid with no cooperation inside blocks is elementwise;
// blocks whose threads cooperate and write one value (or a few) per block
// are row reductions; threads of several blocks updating the same elements
// atomically are a scatter. It returns the class, the evidence in one line,
// and false when the captures say nothing (no case carries the buffers).
// Structural classes the rule drafter does not take (matmul tiles, scans,
// transposes, stencils) are kept: they are refused either way, and their
// structure is the finer fact.
func ClassFromBehaviour(k *Kernel) (string, string, bool) {
	b, ok := behaviourOf(k)
	if !ok {
		return "", "", false
	}
	var outs []string
	for _, o := range b.Outputs {
		outs = append(outs, fmt.Sprintf("%s %d of %d elements", o.Name, o.Changed, o.Elements))
	}
	launch := fmt.Sprintf("%d threads in %d blocks of %d", b.Threads, b.Blocks, b.BlockThreads)
	what := launch + " changed " + strings.Join(outs, ", ")
	switch {
	case b.Atomics && (b.Blocks > 1 || b.anyOutput(func(o OutputWrite) bool { return o.Elements < b.Threads })):
		return ClassScatter, what + " through atomics (no thread owns an output element)", true
	case b.Cooperates && b.Blocks >= 1 && b.allOutputs(func(o OutputWrite) bool { return o.Elements%b.Blocks == 0 }):
		return ClassRowReduction, what + ": each block's threads cooperate on the block's own share of every output (one block per row)", true
	case !b.Cooperates && !b.Atomics:
		return ClassElementwise, what + ", no cooperation inside blocks (one thread per element)", true
	}
	return "", "", false
}

func (b Behaviour) anyOutput(f func(OutputWrite) bool) bool {
	for _, o := range b.Outputs {
		if f(o) {
			return true
		}
	}
	return false
}

func (b Behaviour) allOutputs(f func(OutputWrite) bool) bool {
	for _, o := range b.Outputs {
		if !f(o) {
			return false
		}
	}
	return len(b.Outputs) > 0
}

// behaviourOf reads the launch and the written buffers of the largest
// captured case (the one most threads ran in).
func behaviourOf(k *Kernel) (Behaviour, bool) {
	if k.Captured == nil || k.Unit == nil {
		return Behaviour{}, false
	}
	var best *CapturedCase
	threads := int64(0)
	for i := range k.Captured.Cases {
		c := &k.Captured.Cases[i]
		n := c.Launch[0] * c.Launch[1] * c.Launch[2] * c.Launch[3] * c.Launch[4] * c.Launch[5]
		if len(c.Expected) > 0 && n > threads {
			best, threads = c, n
		}
	}
	if best == nil || threads <= 0 {
		return Behaviour{}, false
	}
	src := k.Unit.Source
	b := Behaviour{
		Threads:      threads,
		Blocks:       best.Launch[0] * best.Launch[1] * best.Launch[2],
		BlockThreads: best.Launch[3] * best.Launch[4] * best.Launch[5],
		Atomics:      strings.Contains(src, "atomic"),
		Cooperates:   strings.Contains(src, "__syncthreads") || strings.Contains(src, "__shfl") || strings.Contains(src, "__syncwarp"),
	}
	names := make([]string, 0, len(best.Expected))
	for name := range best.Expected {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		after := best.Expected[name]
		size := dtypeSize[after.DType]
		if size == 0 {
			return Behaviour{}, false
		}
		o := OutputWrite{Name: name, Elements: int64(len(after.Data)) / size}
		var before []byte
		if bb, ok := best.Args[name].(*CapturedBuffer); ok {
			before = bb.Data
		}
		for i := int64(0); i < o.Elements; i++ {
			a := after.Data[i*size : (i+1)*size]
			if before == nil || int64(len(before)) < (i+1)*size || !bytes.Equal(a, before[i*size:(i+1)*size]) {
				o.Changed++
			}
		}
		b.Outputs = append(b.Outputs, o)
	}
	return b, len(b.Outputs) > 0
}

// overrides says which structural guesses a behaviour class replaces: a
// scatter is never elementwise nor a row; threads that never cooperate are
// not a row reduction; a kernel of unknown structure whose blocks cooperate
// stays unknown (a tiled algorithm is not a row reduction).
var overrides = map[string]map[string]bool{
	ClassScatter:      {ClassElementwise: true, ClassRowReduction: true, ClassOther: true, "": true},
	ClassElementwise:  {ClassRowReduction: true, ClassOther: true, "": true},
	ClassRowReduction: {ClassElementwise: true},
}

// ClassifyCaptured replaces a captured kernel's class by the one its
// launches show (ClassFromBehaviour), in the kernel and its spec, and
// returns the evidence ("" when the class stays).
func ClassifyCaptured(k *Kernel) string {
	switch k.Class {
	case ClassElementwise, ClassRowReduction, ClassOther, "":
	default:
		return ""
	}
	class, why, ok := ClassFromBehaviour(k)
	if !ok || class == k.Class || !overrides[class][k.Class] {
		return ""
	}
	was := k.Class
	k.Class = class
	note := fmt.Sprintf("class %s from the captured launches (not %s by structure): %s", class, was, why)
	if k.Spec != nil {
		k.Spec.Class = class
		k.Spec.Note = strings.TrimPrefix(k.Spec.Note+"; "+note, "; ")
	}
	return note
}
