package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Float32Instance makes a template kernel whose captured launches are all
// float64 the kernel's float32 instantiation: TPU kernels have no float64,
// and a template dispatched over floating types (mmcv's carafe_naive under
// AT_DISPATCH_FLOATING_TYPES_AND_HALF, launched at double by gradcheck) runs
// the same source at float for float32 tensors. It applies only where every
// float64 parameter's declared type is a template parameter the launch bound
// to double (`const scalar_t *`): the unit is re-instantiated with float for
// those, their dtypes become float32, the captured cases' float64 buffers are
// rounded to float32 (the float32 reference must reproduce the float64
// launches within float32's tolerance), and the spec records the dtype the
// tests launched (LaunchedDType) and says so in its note. It reports whether
// it changed k; a kernel that declares `double` itself, or has no float64
// parameter, is left as it is (the drafter refuses float64 with PPL005).
func Float32Instance(k *Kernel) bool {
	if k.Spec == nil || k.Unit == nil || len(k.Unit.templateParams) == 0 || k.Spec.LaunchedDType != "" {
		return false
	}
	doubles := doubleTemplateParams(k.Spec.TemplateArgs)
	if len(doubles) == 0 {
		return false
	}
	var f64 []int
	for i, p := range k.Spec.Params {
		if p.DType != "float64" {
			continue
		}
		if i >= len(k.sig) || !slices.Contains(doubles, k.sig[i].base) {
			return false // a declared double (or a parameter we cannot match) stays float64
		}
		f64 = append(f64, i)
	}
	if len(f64) == 0 {
		return false
	}
	targs := make([]string, len(k.Unit.templateParams))
	args := map[string]string{}
	for i, name := range k.Unit.templateParams {
		targs[i] = k.Spec.TemplateArgs[name]
		if slices.Contains(doubles, name) {
			targs[i] = "float"
		}
		args[name] = targs[i]
	}
	k.Unit.Reinstantiate(targs)
	k.Spec.TemplateArgs, k.TemplateArgs = args, args
	names := map[string]bool{}
	for _, i := range f64 {
		p := &k.Spec.Params[i]
		p.DType = "float32"
		p.CType = substIdents(p.CType, map[string]string{"double": "float"})
		names[p.Name] = true
	}
	k.Spec.LaunchedDType = "float64"
	k.Spec.Note += fmt.Sprintf("; validated at float32 (%s<%s>, the instantiation float32 tensors run): the tests "+
		"launch float64, which TPU kernels do not have, and float64 keeps the original path",
		k.Name, strings.Join(targs, ", "))
	if k.Captured != nil {
		for ci := range k.Captured.Cases {
			roundCase(&k.Captured.Cases[ci], names)
		}
	}
	return true
}

// doubleTemplateParams are the template parameters a launch bound to double.
func doubleTemplateParams(targs map[string]string) []string {
	var out []string
	for name, v := range targs {
		if strings.TrimSpace(v) == "double" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// roundCase rounds the float64 buffers of the named parameters in a captured
// case to float32 (round to nearest, as a float64 tensor's .float() does);
// its label says so.
func roundCase(c *CapturedCase, names map[string]bool) {
	for name, a := range c.Args {
		if b, ok := a.(*CapturedBuffer); ok && names[name] && b.DType == "float64" {
			*b = roundBuffer(*b)
		}
	}
	for name, b := range c.Expected {
		if names[name] && b.DType == "float64" {
			c.Expected[name] = roundBuffer(b)
		}
	}
	c.Label += ", float64 buffers rounded to float32"
}

func roundBuffer(b CapturedBuffer) CapturedBuffer {
	out := make([]byte, len(b.Data)/2)
	for i := 0; i+8 <= len(b.Data); i += 8 {
		v := math.Float64frombits(binary.LittleEndian.Uint64(b.Data[i:]))
		binary.LittleEndian.PutUint32(out[i/2:], math.Float32bits(float32(v)))
	}
	return CapturedBuffer{DType: "float32", Shape: b.Shape, Data: out}
}
