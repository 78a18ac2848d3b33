package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
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
	inst := dtypeInstance{launched: "float64", validated: "float32"}
	inst.apply(k.Spec, k.Captured, f64, func(p *Param, _ int) string {
		return substIdents(p.CType, map[string]string{"double": "float"})
	})
	k.Spec.Note += fmt.Sprintf("; validated at float32 (%s<%s>, the instantiation float32 tensors run): the tests "+
		"launch float64, which TPU kernels do not have, and float64 keeps the original path",
		k.Name, strings.Join(targs, ", "))
	return true
}

// HalfInstance makes an explicit float16 specialisation that no test
// launched (mmcv's bbox_overlaps_cuda_kernel<at::Half>, a body of its own in
// __half intrinsics, whose test runs only where a GPU is) a kernel validated
// at float16 on its primary template's float32 launches: the same shapes and
// scalars, every float32 pointer the specialisation declares as a half type
// float16, the captured buffers rounded to float16 (the half kernel must
// reproduce the float32 launches within float16's tolerance; the random
// cases compare against the half kernel itself), and the spec records that
// the tests launched float32. ls are the launches of the primary template
// SpecFromLaunches found; it reports whether it derived any.
func HalfInstance(k *Kernel, ls []CapturedLaunch) ([]CapturedLaunch, bool) {
	if !isHalfType(strings.Join(k.Specializes, ",")) {
		return nil, false
	}
	var out []CapturedLaunch
	for _, l := range ls {
		if l.Kernel == k.Name && l.Error == "" && targsKey(l.TemplateArgs) == "float" {
			out = append(out, l)
		}
	}
	return out, len(out) > 0
}

// halfParams are the float32 pointer parameters of spec that k declares
// as a half type: the ones a half instance makes float16.
func halfParams(k *Kernel, spec *Spec) []int {
	var out []int
	for i, p := range spec.Params {
		if p.Kind == "pointer" && p.DType == "float32" && i < len(k.sig) && isHalfType(k.sig[i].base) {
			out = append(out, i)
		}
	}
	return out
}

// isHalfType reports a C++ spelling of IEEE half.
func isHalfType(t string) bool {
	switch strings.TrimPrefix(strings.TrimPrefix(strings.Join(strings.Fields(t), ""), "at::"), "c10::") {
	case "Half", "__half", "half":
		return true
	}
	return false
}

// deriveHalf turns the spec and cases SpecFromLaunches derived from a half
// specialisation's float32 launches (HalfInstance) into its float16 spec.
func deriveHalf(k *Kernel, spec *Spec, cp *Capture) error {
	idx := halfParams(k, spec)
	if len(idx) == 0 {
		return fmt.Errorf("kernel %s<%s> declares no half pointer the float32 launches fill", k.Name, strings.Join(k.Specializes, ", "))
	}
	inst := dtypeInstance{launched: "float32", validated: "float16"}
	inst.apply(spec, cp, idx, func(_ *Param, i int) string { return k.sig[i].ctype })
	// the reference names the specialisation as its primary template's
	// instance at its own arguments (k<at::Half>), by the primary's
	// parameter names, which its unit declares
	names := primaryParams(k)
	if len(names) != len(k.Specializes) {
		return fmt.Errorf("kernel %s<%s>: its primary template's parameters are not in its unit", k.Name, strings.Join(k.Specializes, ", "))
	}
	spec.TemplateArgs = map[string]string{}
	for i, n := range names {
		spec.TemplateArgs[n] = k.Specializes[i]
	}
	spec.Note += fmt.Sprintf("; validated at float16 (%s<%s>, the specialisation float16 tensors run) on the "+
		"float32 launches' shapes and scalars: the tests launch only float32, which keeps its own path",
		k.Name, strings.Join(k.Specializes, ", "))
	return nil
}

// primaryParams are the template parameter names of the primary template
// k specialises, as its unit declares them (template <typename T> __global__
// void k(...)); nil where the unit has no such definition.
func primaryParams(k *Kernel) []string {
	if k.Unit == nil {
		return nil
	}
	re := regexp.MustCompile(`template\s*<([^<>{};]*)>\s*(?:__global__|__launch_bounds__\s*\([^)]*\)|static|inline|\s)*\s*void\s+` +
		regexp.QuoteMeta(k.Name) + `\s*\(`)
	m := re.FindStringSubmatch(k.Unit.Source)
	if m == nil {
		return nil
	}
	var out []string
	for _, p := range strings.Split(m[1], ",") {
		if f := strings.Fields(strings.SplitN(p, "=", 2)[0]); len(f) > 0 {
			out = append(out, f[len(f)-1])
		}
	}
	return out
}

// dtypeInstance is a kernel validated at a dtype its tests did not launch
// it at (validated), on cases derived from the launches at launched.
type dtypeInstance struct {
	launched, validated string
}

// apply makes spec's parameters at idx the validated dtype (their C type
// from ctype), rounds the captured cases' buffers of them to it, and
// records both dtypes on the spec.
func (di dtypeInstance) apply(spec *Spec, cp *Capture, idx []int, ctype func(p *Param, i int) string) {
	names := map[string]bool{}
	for _, i := range idx {
		p := &spec.Params[i]
		p.DType, p.CType = di.validated, ctype(p, i)
		names[p.Name] = true
	}
	spec.LaunchedDType, spec.ValidatedDType = di.launched, di.validated
	if cp != nil {
		for ci := range cp.Cases {
			di.roundCase(&cp.Cases[ci], names)
		}
	}
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

// roundCase rounds the launched-dtype buffers of the named parameters in a
// captured case to the validated dtype (round to nearest even, as a
// tensor's .float() or .half() does); its label says so.
func (di dtypeInstance) roundCase(c *CapturedCase, names map[string]bool) {
	for name, a := range c.Args {
		if b, ok := a.(*CapturedBuffer); ok && names[name] && b.DType == di.launched {
			*b = di.roundBuffer(*b)
		}
	}
	for name, b := range c.Expected {
		if names[name] && b.DType == di.launched {
			c.Expected[name] = di.roundBuffer(b)
		}
	}
	c.Label += fmt.Sprintf(", %s buffers rounded to %s", di.launched, di.validated)
}

func (di dtypeInstance) roundBuffer(b CapturedBuffer) CapturedBuffer {
	from, to := dtypeSize[di.launched], dtypeSize[di.validated]
	out := make([]byte, len(b.Data)/int(from/to))
	for i, j := 0, 0; i+int(from) <= len(b.Data); i, j = i+int(from), j+int(to) {
		switch di.launched + ">" + di.validated {
		case "float64>float32":
			v := math.Float64frombits(binary.LittleEndian.Uint64(b.Data[i:]))
			binary.LittleEndian.PutUint32(out[j:], math.Float32bits(float32(v)))
		case "float32>float16":
			v := math.Float32frombits(binary.LittleEndian.Uint32(b.Data[i:]))
			binary.LittleEndian.PutUint16(out[j:], float16Bits(v))
		}
	}
	return CapturedBuffer{DType: di.validated, Shape: b.Shape, Data: out}
}

// float16Bits is f rounded to IEEE half, to nearest even (overflow to inf,
// subnormals, NaN kept quiet), as torch's .half() and __float2half round.
func float16Bits(f float32) uint16 {
	x := math.Float32bits(f)
	sign := uint16(x>>16) & 0x8000
	ax := x & 0x7fffffff
	switch {
	case ax > 0x7f800000: // NaN: quiet, top mantissa bits kept
		return sign | 0x7e00 | uint16(ax>>13)&0x3ff
	case ax >= 0x477ff000: // rounds to 65520 or more: inf
		return sign | 0x7c00
	case ax < 0x33000000: // below half the smallest subnormal (ties to 0 included)
		return sign
	case ax < 0x38800000: // a half subnormal
		shift := 126 - ax>>23
		m := ax&0x7fffff | 0x800000
		r, rem, half := m>>shift, m&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || rem == half && r&1 == 1 {
			r++
		}
		return sign | uint16(r)
	}
	r := ax - 0x38000000
	m, rem := r>>13, r&0x1fff
	if rem > 0x1000 || rem == 0x1000 && m&1 == 1 {
		m++
	}
	return sign | uint16(m)
}
