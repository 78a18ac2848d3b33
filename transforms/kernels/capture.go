package kernels

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/repofs"
)

// SpecCaptured is the spec status of a kernel whose spec was taken from the
// launches the repository's own tests made (the CUDA-on-CPU build of the
// original, with capture on).
const SpecCaptured = "captured"

// CaptureSchema tags each line of a capture dir's launches.jsonl.
const CaptureSchema = "pallasify.capture/v1"

// CapturedCasesSchema tags the captured-cases file the harness reads
// (validators/harness captured.py).
const CapturedCasesSchema = "pallasify.captured/v1"

// CapturedLaunch is one kernel launch recorded by the emulator while the original
// ran (one line of launches.jsonl in a capture dir).
type CapturedLaunch struct {
	Schema       string      `json:"schema"`
	Seq          int         `json:"seq"`
	Kernel       string      `json:"kernel"`
	Instance     string      `json:"instance"`
	TemplateArgs []string    `json:"template_args,omitempty"`
	Grid         [3]int64    `json:"grid"`
	Block        [3]int64    `json:"block"`
	SharedBytes  int64       `json:"shared_bytes"`
	Args         []LaunchArg `json:"args"`
	RolesFrom    string      `json:"roles_from"`
	DurationS    float64     `json:"duration_s"`
	Site         string      `json:"site,omitempty"`  // file:line of the launch
	Error        string      `json:"error,omitempty"` // the launch failed on the emulator
	// Probe is set for a launch the runtime's backward probe made ("backward
	// probe of <Function>"): the test ran the op forward only.
	Probe string `json:"probe,omitempty"`
	// StandIns are absent data files the test read (seeded random data of
	// the shape it asked for) before the launch.
	StandIns []string `json:"standins,omitempty"`
	Dir      string   `json:"-"` // the capture dir the buffers are in
	Entry    string   `json:"-"` // the test entry that made the launch
}

// LaunchArg is one argument of a captured launch: a scalar's value or a
// pointer's buffer (the bytes of [offset, offset+extent) before and after).
type LaunchArg struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	Kind  string `json:"kind"` // scalar, pointer
	CType string `json:"ctype"`
	DType string `json:"dtype"`
	// Decl is the kernel parameter's declared type ("int"), where CType is
	// the type of the value passed ("long int": numel() converted at the
	// call); a scalar's spec dtype is the declared one.
	Decl  string          `json:"decl,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
	// Address is the pointer's value as passed ("0x0": NULL).
	Address     string       `json:"address,omitempty"`
	Alloc       *LaunchAlloc `json:"alloc,omitempty"`
	OffsetBytes int64        `json:"offset_bytes"`
	ExtentBytes int64        `json:"extent_bytes"`
	ShapeHint   []int64      `json:"shape_hint,omitempty"`
	Read        bool         `json:"read"`
	Written     bool         `json:"written"`
	// ReadKnown is false when the role comes from comparing the buffer
	// before and after (a write is seen, a read is not); Role is the
	// recorder's own conclusion (input, output, inout) when it gives one.
	ReadKnown bool   `json:"read_known,omitempty"`
	Role      string `json:"role,omitempty"`
	// Partial is set when the recorder's replay saw the kernel leave part
	// of the buffer untouched: the recorder's role is then inout (the
	// elements never written keep their contents from before the launch).
	Partial bool   `json:"partial,omitempty"`
	Before  string `json:"before,omitempty"`
	After   string `json:"after,omitempty"`
	// Captured is false when the contents were not recorded (over the
	// recorder's byte budget).
	Captured *bool `json:"captured,omitempty"`
}

// LaunchAlloc is the allocation a pointer argument points into.
type LaunchAlloc struct {
	ID     int    `json:"id"`
	Bytes  int64  `json:"bytes"`
	Origin string `json:"origin"`
}

// ReadLaunches parses dir/launches.jsonl. A capture dir without the file
// (nothing was launched) gives no launches and no error. The sandboxed tests
// wrote dir: the file is read only as a regular file inside it, never
// through a link they left there.
func ReadLaunches(dir string) ([]CapturedLaunch, error) {
	rfs, err := repofs.Open(dir)
	if err != nil {
		return nil, err
	}
	defer rfs.Close()
	f, err := rfs.Open("launches.jsonl")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []CapturedLaunch
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var l CapturedLaunch
		if err := json.Unmarshal(b, &l); err != nil {
			return out, fmt.Errorf("%s line %d: %w", filepath.Join(dir, "launches.jsonl"), line, err)
		}
		if l.Schema != CaptureSchema {
			return out, fmt.Errorf("%s line %d: schema %q, want %q", filepath.Join(dir, "launches.jsonl"), line, l.Schema, CaptureSchema)
		}
		l.Dir = dir
		out = append(out, l)
	}
	return out, sc.Err()
}

// CapturedCase is one captured launch as a test case of the validator: the
// before-buffers of the inputs and inouts and the scalars (Args), the
// after-buffers of the outputs and inouts (Expected), the size assignment and
// the launch (grid, block, shared bytes).
type CapturedCase struct {
	Label    string                    `json:"label"`
	Sizes    map[string]int64          `json:"sizes"`
	Launch   [7]int64                  `json:"launch"`
	Args     map[string]any            `json:"args"` // *CapturedBuffer or a number
	Expected map[string]CapturedBuffer `json:"expected"`
}

// CapturedBuffer is a buffer's raw little-endian bytes with its dtype and
// shape (Data is base64 in JSON).
type CapturedBuffer struct {
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	Data  []byte  `json:"data"`
}

// CapturedCasesJSON encodes cases as the harness's captured-cases file.
func CapturedCasesJSON(id string, cases []CapturedCase) ([]byte, error) {
	return json.Marshal(struct {
		Schema string         `json:"schema"`
		Kernel string         `json:"kernel"`
		Cases  []CapturedCase `json:"cases"`
	}{CapturedCasesSchema, id, cases})
}

// Capture is what the capture stage found for one kernel.
type Capture struct {
	Launches int            // launches of this kernel that were recorded
	Used     int            // of which fit the spec (same instance, consistent sizes)
	Cases    []CapturedCase // the used launches as validator cases
	Entries  []string       // the test entries that launched it
	// Narrow is the spec and capture the launches alone give, where the
	// host function's sizes widened them (launcherSizes); nil otherwise.
	Narrow *Narrow
}

// Narrow is a captured spec as the launches' values alone give it: sizes
// equal at the launch fixed, swept at the captured shapes only.
type Narrow struct {
	Spec    *Spec
	Capture *Capture
}

// UseNarrow makes the narrow captured spec the kernel's (the validator
// falls back to it where the host-widened one is not proven, so the op
// keeps the guard of the shapes the tests launched); false when there is
// none.
func (k *Kernel) UseNarrow() bool {
	if k.Captured == nil || k.Captured.Narrow == nil {
		return false
	}
	n := k.Captured.Narrow
	k.Spec, k.Captured = n.Spec, n.Capture
	return true
}

var dtypeSize = map[string]int64{"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int32": 4, "int64": 8,
	"uint32": 4, "uint8": 1, "int8": 1, "int16": 2, "uint16": 2, "uint64": 8, "bool": 1}

// isNull reports a pointer argument passed as NULL (an empty tensor's
// data_ptr(), or nullptr): it points into no allocation and has no extent.
func isNull(a LaunchArg) bool {
	if a.Kind != "pointer" || a.Alloc != nil || a.ExtentBytes != 0 {
		return false
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(a.Address)), "0x"), 16, 64)
	return err == nil && v == 0
}

// maxCaseBytes bounds the buffers of one kernel's captured cases (the
// validator reads them as one JSON file).
const maxCaseBytes = 48 << 20

// SpecFromLaunches turns the recorded launches of kernel k into a spec:
// concrete shapes, dtypes, roles and launch configuration from the first
// launch, with size symbols where a relation is evident (an integer scalar
// equal to a buffer's extent or element count; a grid that is the ceiling of
// such a size over the block). Later launches of the same instance whose
// sizes fit the same relations become further sweep entries; every used
// launch is also a captured case. Launches that fit nothing are left out
// (Capture.Used counts the rest). A float16 specialisation no test launched
// takes its primary template's float32 launches, rounded (HalfInstance).
func SpecFromLaunches(k *Kernel, ls []CapturedLaunch) (*Spec, *Capture, error) {
	var mine []CapturedLaunch
	var others []string // template arguments of same-named launches another body runs
	for _, l := range ls {
		if l.Kernel == k.Name && l.Error == "" {
			if !k.RunsBody(l.TemplateArgs) {
				others = appendUniq(others, "<"+strings.Join(l.TemplateArgs, ", ")+">")
				continue
			}
			mine = append(mine, l)
		}
	}
	cp := &Capture{Launches: len(mine)}
	if len(mine) == 0 && len(k.Specializes) > 0 && len(others) > 0 {
		notLaunched := fmt.Errorf("kernel %s<%s> (an explicit specialisation) was not launched: the tests launched %s, which run the primary template", k.Name, strings.Join(k.Specializes, ", "), strings.Join(others, ", "))
		derived, ok := HalfInstance(k, ls)
		if !ok {
			return nil, cp, notLaunched
		}
		spec, dcp, err := specFrom(k, derived, true)
		if err != nil {
			return nil, cp, fmt.Errorf("%v; its float16 instance on those launches: %v", notLaunched, err)
		}
		dcp.Launches = 0 // none of its own
		return spec, dcp, nil
	}
	if len(mine) == 0 {
		return nil, cp, fmt.Errorf("kernel %s was not launched", k.Name)
	}
	return specFrom(k, mine, false)
}

// specFrom is SpecFromLaunches on the launches k runs (mine, non-empty);
// half: they are its primary template's float32 launches, which deriveHalf
// makes its float16 cases.
func specFrom(k *Kernel, mine []CapturedLaunch, half bool) (*Spec, *Capture, error) {
	cp := &Capture{Launches: len(mine)}
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].Seq < mine[j].Seq })
	// The shapes come from the first launch that can carry a spec: a test's
	// first call is often a degenerate one (empty tensors, an unused output
	// of another mode), and a later launch of the same kernel is not.
	var first CapturedLaunch
	var sh *shaper
	var err error
	for _, l := range mine {
		if sh, err = newShaper(k, l, sameInstance(mine, l)); err == nil {
			first = l
			break
		}
	}
	if sh == nil {
		return nil, cp, err
	}
	if sp := splitShaper(k, first, sh, sameInstance(mine, first)); sp != nil {
		sh = sp
	}
	spec, cp, widened, err := specWith(k, mine, half, first, sh, nil)
	if err != nil || widened {
		return spec, cp, err
	}
	// the launches show one shape only: the host function may say which
	// sizes are which (launcherSizes)
	if hs, free := hostShaper(k, first, sh, sameInstance(mine, first)); hs != nil {
		if hspec, hcp, _, herr := specWith(k, mine, half, first, hs, free); herr == nil {
			hcp.Narrow = &Narrow{Spec: spec, Capture: cp}
			return hspec, hcp, nil
		}
	}
	return spec, cp, nil
}

// specWith is specFrom's spec from shaper sh read off launch first, its
// sweep widened over free (the symbols the host function frees) when free
// is given, else where the launches show the sizes apart; widened says
// whether it was.
func specWith(k *Kernel, mine []CapturedLaunch, half bool, first CapturedLaunch, sh *shaper, free []string) (*Spec, *Capture, bool, error) {
	cp := &Capture{Launches: len(mine)}
	spec := sh.spec()
	seen := map[string]bool{}
	var bytesUsed int64
	// An integer scalar that is no symbol but changes between the launches
	// that fit (mmcv's nthreads = N × num_classes, a product the shapes do
	// not show) is a size the spec fixes at the first launch's value: only
	// sizes captured with that value are swept, and none around them. So is
	// one equal to a symbolic buffer's element count (tiedToHidden).
	hidden := sh.hiddenScalars()
	varies := false
	misfits := 0 // launches of the instance the relations do not fit
	for _, l := range mine {
		if l.Instance != first.Instance {
			continue
		}
		sizes, ok := sh.fit(l)
		if !ok {
			misfits++
			continue
		}
		c, n, err := sh.captured(l, sizes)
		if err != nil {
			continue
		}
		if bytesUsed+n > maxCaseBytes && len(cp.Cases) > 0 {
			continue
		}
		bytesUsed += n
		cp.Used++
		cp.Cases = append(cp.Cases, c)
		cp.Entries = appendOne(cp.Entries, l.Entry)
		if !sameScalars(l, first, hidden) {
			varies = true
			continue
		}
		key := sizesKey(sizes)
		if len(spec.Symbols) > 0 && !seen[key] {
			seen[key] = true
			spec.Domain.Sweep = append(spec.Domain.Sweep, sizes)
		}
	}
	if cp.Used == 0 {
		return nil, cp, false, fmt.Errorf("no launch of %s could be read back (buffers missing or unreadable)", k.Name)
	}
	widened := true
	switch {
	case len(free) > 0 && !varies && misfits == 0:
		spec.Domain.Sweep = hostSweep(spec.Domain.Sweep, free)
	case len(free) > 0:
		return nil, cp, false, fmt.Errorf("the launches of %s do not all follow the host function's sizes", k.Name)
	case len(spec.Symbols) == 1 && !varies && !sh.tiedToHidden(hidden):
		spec.Domain.Sweep = around(spec.Domain.Sweep, spec.Symbols[0])
	case len(spec.Symbols) > 1 && !varies && misfits == 0 && shownApart(spec.Domain.Sweep, spec.Symbols) &&
		!related(spec.Domain.Sweep, spec.Symbols) && !sh.tiedToHidden(hidden):
		spec.Domain.Sweep = aroundEach(spec.Domain.Sweep, spec.Symbols, hasIntInput(spec))
	default:
		widened = false
	}
	for _, s := range spec.Symbols {
		if m, ok := sh.oneBlock[s]; ok {
			spec.Domain.Constraints = append(spec.Domain.Constraints, fmt.Sprintf("%s <= %d", s, m))
			spec.Domain.Sweep = within(spec.Domain.Sweep, s, m)
		}
	}
	sh.boundProducts(spec)
	if half {
		if err := deriveHalf(k, spec, cp); err != nil {
			return nil, cp, false, err
		}
	}
	capturedIntRanges(spec, cp.Cases)
	if probs := ValidateSpec(spec, k); len(probs) > 0 {
		return nil, cp, false, fmt.Errorf("captured spec does not fit the kernel: %s", probs[0])
	}
	return spec, cp, widened, nil
}

// capturedIntRanges bounds the random data of every integer input to the
// values the captured launches passed ([min, max+1) over every case): such
// an input is most often an index (mmcv's idx into points, a label into the
// classes), and data drawn outside what the repository passes makes the
// original read out of bounds, which is undefined, not a behaviour to
// compare. A range the spec already has is kept.
func capturedIntRanges(spec *Spec, cases []CapturedCase) {
	for i := range spec.Params {
		p := &spec.Params[i]
		if p.Kind != "pointer" || p.Role != "input" || p.Null || len(p.IntRange) > 0 {
			continue
		}
		lo, hi, ok := int64(0), int64(0), false
		for _, c := range cases {
			b, isBuf := c.Args[p.Name].(*CapturedBuffer)
			if !isBuf {
				continue
			}
			vs, isInt := intValues(b)
			if !isInt {
				break
			}
			for _, v := range vs {
				if !ok || v < lo {
					lo = v
				}
				if !ok || v > hi {
					hi = v
				}
				ok = true
			}
		}
		if ok {
			p.IntRange = []int64{lo, hi + 1}
		}
	}
}

// intValues decodes an integer buffer (little-endian); false for any other
// dtype.
func intValues(b *CapturedBuffer) ([]int64, bool) {
	size, signed := map[string]int{"int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
		"int64": 8, "uint64": 8}[b.DType], strings.HasPrefix(b.DType, "int")
	if size == 0 || len(b.Data)%size != 0 {
		return nil, false
	}
	out := make([]int64, 0, len(b.Data)/size)
	for i := 0; i < len(b.Data); i += size {
		var u uint64
		for j := size - 1; j >= 0; j-- {
			u = u<<8 | uint64(b.Data[i+j])
		}
		v := int64(u)
		if signed && size < 8 && u&(1<<(8*size-1)) != 0 {
			v = int64(u) - int64(1)<<(8*size)
		}
		out = append(out, v)
	}
	return out, true
}

// hiddenScalars are the indices of the integer scalars that are no symbol.
func (sh *shaper) hiddenScalars() []int {
	var out []int
	for i, a := range sh.first.Args {
		if isIntScalar(a) && !contains(sh.syms, argName(sh.k, a, i)) && sh.sizeExpr[i] == nil {
			out = append(out, i)
		}
	}
	return out
}

// tiedToHidden reports whether a hidden scalar (at idx) is the element
// count of a buffer whose shape has a symbol (mmcv's nthreads =
// output.numel()): a size the spec fixes while its symbol would be swept
// alone, so the kernel's extent would no longer match its buffers there.
func (sh *shaper) tiedToHidden(idx []int) bool {
	env := sh.env(sh.first)
	for _, i := range idx {
		v, ok := scalarInt(sh.first.Args[i])
		if !ok {
			continue
		}
		for _, ds := range sh.dims {
			if allLit(ds) {
				continue
			}
			n := int64(1)
			for _, d := range ds {
				x, err := d.Eval(env)
				if err != nil {
					n = -1
					break
				}
				n *= x
			}
			if n == v {
				return true
			}
		}
	}
	return false
}

// sameScalars reports whether launch l passed the same values as first for
// the scalars at idx.
func sameScalars(l, first CapturedLaunch, idx []int) bool {
	for _, i := range idx {
		if i >= len(l.Args) {
			return false
		}
		a, ok1 := scalarInt(l.Args[i])
		b, ok2 := scalarInt(first.Args[i])
		if !ok1 || !ok2 || a != b {
			return false
		}
	}
	return true
}

// around adds the sizes next to each captured one (±1, half, double+1) for a
// one-symbol spec, so the sweep covers tails and block boundaries near the
// sizes the repository uses.
func around(sweep []map[string]int64, sym string) []map[string]int64 {
	seen := map[int64]bool{}
	var vals []int64
	add := func(v int64) {
		if v >= 1 && !seen[v] {
			seen[v] = true
			vals = append(vals, v)
		}
	}
	for _, a := range sweep {
		add(a[sym])
	}
	for _, a := range sweep {
		v := a[sym]
		add(v - 1)
		add(v + 1)
		add(v / 2)
		add(2*v + 1)
	}
	out := make([]map[string]int64, len(vals))
	for i, v := range vals {
		out[i] = map[string]int64{sym: v}
	}
	return out
}

// assignments is a list of size assignments, each kept once.
type assignments struct {
	seen map[string]bool
	list []map[string]int64
}

// add appends a unless an equal assignment is already listed.
func (as *assignments) add(a map[string]int64) {
	if as.seen == nil {
		as.seen = map[string]bool{}
	}
	if k := sizesKey(a); !as.seen[k] {
		as.seen[k] = true
		as.list = append(as.list, a)
	}
}

func sizesKey(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d,", k, m[k])
	}
	return b.String()
}

// shaper holds the relations read off the first launch.
type shaper struct {
	k     *Kernel
	first CapturedLaunch
	// dims of each pointer param as expressions; sizeExpr of each size param
	dims  map[int][]*Expr
	grid  [3]*Expr
	block [3]int64
	syms  []string
	// dimSyms are sizes no scalar passes (split): read off a buffer's dim
	dimSyms []dimSym
	// sizeExpr are integer scalars no dim names that are a product of two
	// sizes in every launch (nthreads = rows · num_classes)
	sizeExpr map[int]*Expr
	// hostDims are the dims (argument, dim) the host function names
	// (shapeWith with host)
	hostDims map[[2]int]bool
	// oneBlock bounds symbols whose captured value fits one block of a grid
	// dimension captured as 1: a constant grid of 1 and ceil(sym / block)
	// agree there, nowhere else, so the sweep stays where the launch is known.
	oneBlock map[string]int64
}

// boundOneBlock records, for a grid dimension d captured as 1, the block
// size as the largest value of each symbol that fits in that one block.
func (sh *shaper) boundOneBlock(l CapturedLaunch, d int) {
	env := sh.env(l)
	for _, b := range []int64{l.Block[d], l.Block[0] * l.Block[1] * l.Block[2]} {
		for _, s := range sh.syms {
			v, err := Sym(s).Eval(env)
			if err != nil || v < 1 || v > b || b <= 1 {
				continue
			}
			if sh.oneBlock == nil {
				sh.oneBlock = map[string]int64{}
			}
			if m, ok := sh.oneBlock[s]; !ok || b < m {
				sh.oneBlock[s] = b
			}
		}
	}
}

func argName(k *Kernel, a LaunchArg, i int) string {
	if k.sig != nil && i < len(k.sig) && k.sig[i].name != "" {
		return k.sig[i].name
	}
	if a.Name != "" {
		return a.Name
	}
	return fmt.Sprintf("arg%d", i)
}

func isIntScalar(a LaunchArg) bool {
	return a.Kind == "scalar" && (a.DType == "int32" || a.DType == "int64" || a.DType == "uint32")
}

func scalarInt(a LaunchArg) (int64, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(string(a.Value)), 10, 64)
	return v, err == nil
}

func scalarFloat(a LaunchArg) (float64, bool) {
	s := strings.Trim(strings.TrimSpace(string(a.Value)), `"`)
	switch strings.ToLower(s) {
	case "true":
		return 1, true
	case "false":
		return 0, true
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// elems is the number of elements a pointer argument's extent holds.
func elems(a LaunchArg) (int64, bool) {
	sz := dtypeSize[a.DType]
	if sz == 0 || a.ExtentBytes <= 0 || a.ExtentBytes%sz != 0 {
		return 0, false
	}
	return a.ExtentBytes / sz, true
}

// shapeOf is the tensor's sizes when they cover the extent, else 1-D.
func shapeOf(a LaunchArg) ([]int64, bool) {
	n, ok := elems(a)
	if !ok {
		return nil, false
	}
	if len(a.ShapeHint) > 0 {
		p := int64(1)
		for _, d := range a.ShapeHint {
			p *= d
		}
		if p == n {
			return append([]int64(nil), a.ShapeHint...), true
		}
	}
	return []int64{n}, true
}

var identOnly = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func newShaper(k *Kernel, l CapturedLaunch, others []CapturedLaunch) (*shaper, error) {
	return shape(k, l, others, false)
}

// shape is shapeWith, the dims named by the launch's values only.
func shape(k *Kernel, l CapturedLaunch, others []CapturedLaunch, split bool) (*shaper, error) {
	return shapeWith(k, l, others, split, false)
}

// shape reads the relations off launch l (others: the instance's other
// launches). With split, a dim that equals one scalar at l but not in
// another launch, and varies, is a size of its own (dimSym), and an
// integer scalar no dim names is the product of two sizes where every
// launch shows it (sizeExpr).
// With host, a dim the host function states (launcherSizes) is named by
// the integer argument the host passes as it, whatever other argument has
// the same value at l.
func shapeWith(k *Kernel, l CapturedLaunch, others []CapturedLaunch, split, host bool) (*shaper, error) {
	if k.sig != nil && len(k.sig) != len(l.Args) {
		return nil, fmt.Errorf("launch of %s has %d arguments, the kernel takes %d", k.Name, len(l.Args), len(k.sig))
	}
	sh := &shaper{k: k, first: l, dims: map[int][]*Expr{}, block: l.Block}
	others = comparable(l, others)
	// integer scalars that name a size: value -> the scalars with it
	byValue := map[int64][]int{}
	for i, a := range l.Args {
		if isIntScalar(a) && identOnly.MatchString(argName(k, a, i)) {
			if v, ok := scalarInt(a); ok && v > 1 {
				byValue[v] = append(byValue[v], i)
			}
		}
	}
	used := map[int]bool{}
	symOf := func(v int64) *Expr {
		if c := byValue[v]; len(c) == 1 {
			used[c[0]] = true
			return Sym(argName(k, l.Args[c[0]], c[0]))
		}
		return Lit(v)
	}
	// a size several scalars equal at the first launch, or none: the other
	// launches of the instance may tell which scalar (or product of two) it
	// follows (elemsOf reads the size in a launch)
	sizeOf := func(v int64, elemsOf func(CapturedLaunch) (int64, bool), param string, j int) *Expr {
		if c := byValue[v]; split && len(c) == 1 {
			if e, ok := sh.splitDim(l, others, c[0], v, elemsOf, param, j); ok {
				used[c[0]] = true // the scalar stays a size: the kernel is given it
				return e
			}
		}
		if e := symOf(v); e.Op == "sym" {
			return e
		}
		var cands []int
		for _, c := range byValue {
			cands = append(cands, c...)
		}
		sort.Ints(cands)
		if f := followed(l, others, cands, v, elemsOf); f != nil {
			for _, i := range f {
				used[i] = true
			}
			e := Sym(argName(k, l.Args[f[0]], f[0]))
			if len(f) == 2 {
				e = Bin("*", e, Sym(argName(k, l.Args[f[1]], f[1])))
			}
			return e
		}
		return Lit(v)
	}
	for i, a := range l.Args {
		if a.Kind != "pointer" && a.Kind != "scalar" {
			return nil, fmt.Errorf("argument %s is a %s (%s): only pointers and scalars are captured", argName(k, a, i), a.Kind, a.CType)
		}
		if a.Kind != "pointer" {
			continue
		}
		if isNull(a) {
			// a NULL pointer the kernel tests for: an empty input
			sh.dims[i] = []*Expr{Lit(0)}
			continue
		}
		if a.Captured != nil && !*a.Captured {
			return nil, fmt.Errorf("argument %s: contents not recorded (over the capture byte budget)", argName(k, a, i))
		}
		if dtypeSize[a.DType] == 0 {
			return nil, fmt.Errorf("argument %s: dtype %q cannot be captured", argName(k, a, i), a.DType)
		}
		shape, ok := shapeOf(a)
		if !ok {
			return nil, fmt.Errorf("argument %s: extent of %d bytes is not a whole number of %s elements", argName(k, a, i), a.ExtentBytes, a.DType)
		}
		var ds []*Expr
		hinted := len(a.ShapeHint) == len(shape)
		for j, d := range shape {
			if host {
				if e, c := sh.hostDim(i, j, len(shape), hinted, d); e != nil {
					used[c] = true
					ds = append(ds, e)
					continue
				}
			}
			jj := j
			if len(shape) == 1 {
				jj = -1 // named <buffer>_size
			}
			ds = append(ds, sizeOf(d, dimOf(i, j, len(shape)), argName(k, a, i), jj))
		}
		if len(shape) > 1 && allLit(ds) {
			// a scalar equal to the element count relates the flat buffer
			n := int64(1)
			for _, d := range shape {
				n *= d
			}
			if e := sizeOf(n, func(o CapturedLaunch) (int64, bool) { return elems(o.Args[i]) }, argName(k, a, i), -1); e.Op != "lit" {
				ds = []*Expr{e}
			}
		}
		sh.dims[i] = ds
	}
	for i := range l.Args {
		if used[i] {
			sh.syms = append(sh.syms, argName(k, l.Args[i], i))
		}
	}
	for _, d := range sh.dimSyms {
		sh.syms = append(sh.syms, d.name)
	}
	if split {
		sh.productScalars(others)
	}
	// grids: ceil(size / block) of a symbol or of a buffer's element count
	bx := l.Block[0] * l.Block[1] * l.Block[2]
	for d := range 3 {
		sh.grid[d] = Lit(l.Grid[d])
		if host {
			if e := sh.hostGrid(l, d); e != nil {
				sh.grid[d] = e
				continue
			}
		}
		if l.Grid[d] == 1 && bx > 1 {
			sh.boundOneBlock(l, d)
		}
		if l.Grid[d] <= 1 || bx <= 1 {
			continue
		}
		for _, e := range sh.sizeExprs() {
			v, err := e.Eval(sh.env(l))
			if err != nil || v <= 0 {
				continue
			}
			if l.Block[d] == 1 && v == l.Grid[d] {
				// one block per element of the dimension (blockIdx.z = channel)
				sh.grid[d] = e
				break
			}
			for _, b := range []int64{l.Block[d], bx} {
				if b > 1 && (v+b-1)/b == l.Grid[d] {
					sh.grid[d] = CeilDiv(e, Lit(b))
					break
				}
			}
			if sh.grid[d].Op != "lit" {
				break
			}
		}
	}
	return sh, nil
}

func allLit(es []*Expr) bool {
	for _, e := range es {
		if e.Op != "lit" {
			return false
		}
	}
	return true
}

// sizeExprs are the symbolic sizes a grid may follow: each symbol, and each
// buffer's element count that involves one.
func (sh *shaper) sizeExprs() []*Expr {
	var out []*Expr
	for _, s := range sh.syms {
		out = append(out, Sym(s))
	}
	for i := range sh.first.Args {
		ds := sh.dims[i]
		if len(ds) < 2 || allLit(ds) {
			continue
		}
		p := ds[0]
		for _, d := range ds[1:] {
			p = Bin("*", p, d)
		}
		out = append(out, p)
	}
	return out
}

// env is the size assignment of a launch: each symbol's scalar value.
func (sh *shaper) env(l CapturedLaunch) map[string]int64 {
	env := map[string]int64{}
	for i, a := range l.Args {
		nm := argName(sh.k, a, i)
		for _, s := range sh.syms {
			if s == nm {
				v, _ := scalarInt(a)
				env[s] = v
			}
		}
	}
	for _, d := range sh.dimSyms {
		if v, ok := d.read(l); ok {
			env[d.name] = v
		}
	}
	return env
}

// fit reports whether launch l follows the first launch's relations: every
// buffer's extent and the grid evaluate to what l recorded.
func (sh *shaper) fit(l CapturedLaunch) (map[string]int64, bool) {
	if len(l.Args) != len(sh.first.Args) || l.Block != sh.first.Block || l.SharedBytes != sh.first.SharedBytes {
		return nil, false
	}
	env := sh.env(l)
	for i, a := range l.Args {
		if a.Kind != sh.first.Args[i].Kind || a.DType != sh.first.Args[i].DType {
			return nil, false
		}
		if a.Kind != "pointer" {
			continue
		}
		if isNull(a) != isNull(sh.first.Args[i]) {
			return nil, false
		}
		if isNull(a) {
			continue
		}
		n, ok := elems(a)
		if !ok {
			return nil, false
		}
		p := int64(1)
		for _, d := range sh.dims[i] {
			v, err := d.Eval(env)
			if err != nil {
				return nil, false
			}
			p *= v
		}
		if p != n {
			return nil, false
		}
	}
	for d := range 3 {
		v, err := sh.grid[d].Eval(env)
		if err != nil || v != l.Grid[d] {
			return nil, false
		}
	}
	return env, true
}

func roleOf(a LaunchArg) string {
	switch {
	case a.Partial && a.Written:
		// written in part: the untouched elements are part of the result
		return "inout"
	case a.Role == "input" || a.Role == "output" || a.Role == "inout":
		return a.Role
	case a.Written && !a.Read && !a.ReadKnown && a.Before != "":
		// a write seen by comparing contents says nothing of reads: the
		// candidate gets the buffer's contents too
		return "inout"
	case a.Written && a.Read:
		return "inout"
	case a.Written:
		return "output"
	default:
		return "input"
	}
}

func (sh *shaper) spec() *Spec {
	k, l := sh.k, sh.first
	s := &Spec{Schema: SpecSchema, ID: k.ID, Name: k.Name, Class: k.Class,
		Source:        SpecSource{Path: k.Path, Line: k.Line, Origin: k.Origin},
		Symbols:       append([]string{}, sh.syms...),
		Deterministic: !strings.Contains(unitSource(k), "atomic"),
		FastMath:      k.FastMath,
		Note:          fmt.Sprintf("captured from %s (launch %d of %s)", l.Entry, l.Seq, l.Instance),
	}
	if l.Probe != "" {
		s.Note = fmt.Sprintf("captured from %s (launch %d of %s, made by the %s at the inputs of the test's forward call)",
			l.Entry, l.Seq, l.Instance, l.Probe)
	}
	if len(l.StandIns) > 0 {
		s.Note += fmt.Sprintf("; the test's data files %s are absent from the tree: their shapes are the test's, "+
			"their contents seeded random stand-ins", strings.Join(l.StandIns, ", "))
	}
	if s.Class == "" {
		s.Class = ClassOther
	}
	if targs := sh.templateArgs(); len(targs) > 0 {
		s.TemplateArgs = targs
	}
	for i, a := range l.Args {
		p := Param{Name: argName(k, a, i), Kind: a.Kind, CType: a.CType, DType: a.DType}
		if p.CType == "" && k.sig != nil && i < len(k.sig) {
			p.CType = k.sig[i].ctype
		}
		if a.Kind == "scalar" {
			p.CType, p.DType = declaredScalar(k, a, i, p.CType, p.DType)
		}
		switch {
		case isNull(a):
			p.Role, p.Null, p.Shape = "input", true, []string{"0"}
		case a.Kind == "pointer":
			p.Role = roleOf(a)
			for _, d := range sh.dims[i] {
				p.Shape = append(p.Shape, d.String())
			}
		case contains(sh.syms, p.Name):
			p.Role, p.Expr = "size", p.Name
		case sh.sizeExpr[i] != nil:
			p.Role, p.Expr = "size", sh.sizeExpr[i].String()
		default:
			p.Role = "scalar"
			if v, ok := scalarFloat(a); ok {
				p.Value = &v
			}
		}
		s.Params = append(s.Params, p)
	}
	for d := range 3 {
		s.Launch.Grid[d] = sh.grid[d].String()
		s.Launch.Block[d] = strconv.FormatInt(l.Block[d], 10)
	}
	s.Launch.SharedBytes = strconv.FormatInt(l.SharedBytes, 10)
	return s
}

// templateArgs maps the kernel's template parameters to the captured
// instance's arguments.
func (sh *shaper) templateArgs() map[string]string {
	if len(sh.first.TemplateArgs) == 0 || sh.k.Unit == nil || len(sh.k.Unit.templateParams) == 0 {
		return nil
	}
	out := map[string]string{}
	for i, name := range sh.k.Unit.templateParams {
		if i < len(sh.first.TemplateArgs) {
			out[name] = sh.first.TemplateArgs[i]
		}
	}
	return out
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func unitSource(k *Kernel) string {
	if k.Unit == nil {
		return ""
	}
	return k.Unit.Source
}

// captured reads launch l's buffers into a validator case; n is its bytes.
func (sh *shaper) captured(l CapturedLaunch, sizes map[string]int64) (CapturedCase, int64, error) {
	c := CapturedCase{Label: fmt.Sprintf("launch %d (%s) of %s", l.Seq, l.Instance, l.Entry), Sizes: sizes,
		Args: map[string]any{}, Expected: map[string]CapturedBuffer{}}
	c.Launch = [7]int64{l.Grid[0], l.Grid[1], l.Grid[2], l.Block[0], l.Block[1], l.Block[2], l.SharedBytes}
	var n int64
	for i, a := range l.Args {
		name := argName(sh.k, a, i)
		if a.Kind != "pointer" {
			if v, ok := scalarInt(a); ok {
				c.Args[name] = v
			} else if f, ok := scalarFloat(a); ok {
				c.Args[name] = f
			} else {
				return c, 0, fmt.Errorf("argument %s: value %s is not a number", name, a.Value)
			}
			continue
		}
		if isNull(a) {
			c.Args[name] = &CapturedBuffer{DType: a.DType, Shape: []int64{0}, Data: []byte{}}
			continue
		}
		shape := make([]int64, len(sh.dims[i]))
		for j, d := range sh.dims[i] {
			v, err := d.Eval(sizes)
			if err != nil {
				return c, 0, err
			}
			shape[j] = v
		}
		role := roleOf(sh.first.Args[i])
		if role != "output" {
			b, err := readBuf(l.Dir, a.Before, a.ExtentBytes)
			if err != nil {
				return c, 0, fmt.Errorf("argument %s: %w", name, err)
			}
			c.Args[name] = &CapturedBuffer{DType: a.DType, Shape: shape, Data: b}
			n += int64(len(b))
		}
		if role != "input" {
			b, err := readBuf(l.Dir, a.After, a.ExtentBytes)
			if err != nil {
				return c, 0, fmt.Errorf("argument %s: %w", name, err)
			}
			c.Expected[name] = CapturedBuffer{DType: a.DType, Shape: shape, Data: b}
			n += int64(len(b))
		}
	}
	return c, n, nil
}

func readBuf(dir, name string, want int64) ([]byte, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == ".." {
		return nil, fmt.Errorf("no buffer file recorded (%q)", name)
	}
	// The sandboxed tests wrote the buffer files: a link among them is not
	// followed out of dir.
	b, err := repofs.ReadFile(dir, name, want)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != want {
		return nil, fmt.Errorf("buffer %s holds %d bytes, the launch recorded %d", name, len(b), want)
	}
	return b, nil
}

// UseCapture makes a captured spec the kernel's spec (it wins over a user
// spec file and static inference) and, when the captured instance's template
// arguments differ from the unit's, re-instantiates the isolated unit; a
// template launched only at float64 becomes its float32 instantiation
// (Float32Instance).
func (k *Kernel) UseCapture(spec *Spec, cp *Capture) {
	k.Spec, k.SpecStatus, k.Reason = spec, SpecCaptured, ""
	k.Captured = cp
	k.instantiate(spec.TemplateArgs)
	Float32Instance(k)
}

// instantiate re-instantiates a template kernel's unit with the spec's
// template arguments (by parameter name), when it names any.
func (k *Kernel) instantiate(args map[string]string) {
	if len(args) == 0 || k.Unit == nil {
		return
	}
	var targs []string
	for i, name := range k.Unit.templateParams {
		v, ok := args[name]
		if !ok && i < len(k.Unit.instTargs) {
			v = k.Unit.instTargs[i] // a parameter the spec does not name keeps its argument
		}
		targs = append(targs, v)
	}
	k.Unit.Reinstantiate(targs)
	k.TemplateArgs = args
}

// declaredScalar is a scalar parameter's C type and dtype as the kernel
// declares it: the capture records the value as passed (a numel() passed to
// an int parameter is "long int"), and the kernel converts it on the call.
func declaredScalar(k *Kernel, a LaunchArg, i int, ctype, dtype string) (string, string) {
	decl := a.Decl
	if decl == "" && k.sig != nil && i < len(k.sig) {
		decl = k.sig[i].ctype
	}
	if d, ok := dtypeOf(decl); ok {
		return strings.TrimSpace(decl), d
	}
	return ctype, dtype
}

// within keeps the sweep's assignments whose sym is at most max.
func within(sweep []map[string]int64, sym string, max int64) []map[string]int64 {
	var out []map[string]int64
	for _, a := range sweep {
		if v, ok := a[sym]; !ok || v <= max {
			out = append(out, a)
		}
	}
	return out
}

// sameInstance are the launches of ls of l's instance, but l.
func sameInstance(ls []CapturedLaunch, l CapturedLaunch) []CapturedLaunch {
	var out []CapturedLaunch
	for _, o := range ls {
		if o.Instance == l.Instance && o.Seq != l.Seq {
			out = append(out, o)
		}
	}
	return out
}

// comparable keeps the launches whose arguments have l's kinds, dtypes and
// NULL pointers and whose block is l's: those whose sizes can tell which
// scalar a size of l's follows.
func comparable(l CapturedLaunch, ls []CapturedLaunch) []CapturedLaunch {
	var out []CapturedLaunch
next:
	for _, o := range ls {
		if len(o.Args) != len(l.Args) || o.Block != l.Block {
			continue
		}
		for i, a := range o.Args {
			b := l.Args[i]
			if a.Kind != b.Kind || a.DType != b.DType || isNull(a) != isNull(b) {
				continue next
			}
		}
		out = append(out, o)
	}
	return out
}

// dimOf reads dim j of pointer argument i (of rank dims) in a launch: the
// extent's element count for a 1-D buffer, the shape hint's dim otherwise.
func dimOf(i, j, rank int) func(CapturedLaunch) (int64, bool) {
	return func(o CapturedLaunch) (int64, bool) {
		s, ok := shapeOf(o.Args[i])
		if !ok || len(s) != rank {
			return 0, false
		}
		return s[j], true
	}
}

// followed is the scalar (one index) or the product of two scalars (two)
// that a size v of the first launch follows in every other launch (size(o)
// read there), when exactly one candidate does and the launches show it:
// the candidates differ in some launch. Scalars equal to v at the first
// launch are the candidates (mmcv's softmax focal loss: nthreads =
// num_classes = 2, and the output's 2 elements are nthreads, as the launch
// with 3 classes shows); when none is, the products of two that equal v
// (its softmax's 4 = nthreads · num_classes, 6 with 3 classes). nil when no
// candidate, or more than one, follows the size.
func followed(first CapturedLaunch, others []CapturedLaunch, cands []int, v int64, size func(CapturedLaunch) (int64, bool)) []int {
	val := func(l CapturedLaunch, f []int) (int64, bool) {
		p := int64(1)
		for _, i := range f {
			x, ok := scalarInt(l.Args[i])
			if !ok {
				return 0, false
			}
			p *= x
		}
		return p, true
	}
	var singles, pairs [][]int
	for x, a := range cands {
		if p, _ := val(first, []int{a}); p == v {
			singles = append(singles, []int{a})
		}
		for _, b := range cands[x:] {
			if p, _ := val(first, []int{a, b}); p == v {
				pairs = append(pairs, []int{a, b})
			}
		}
	}
	fs := singles
	if len(fs) == 0 {
		fs = pairs
	}
	var keep []int
	shown := false
	for _, f := range fs {
		ok := true
		for _, o := range others {
			n, okN := size(o)
			p, okP := val(o, f)
			if !okN || !okP || n != p {
				ok = false
				break
			}
			shown = shown || p != v
		}
		if ok {
			if keep != nil {
				return nil
			}
			keep = f
		}
	}
	if keep == nil || (len(fs) == 1 && !shown) {
		// one candidate and no launch that varies it: a coincidence
		// of the sizes is as likely as a relation
		return nil
	}
	return keep
}

// aroundEach adds, for a spec of several symbols whose every launch fits
// the relations, the sizes next to each captured assignment one symbol at
// a time (+1 and double+1; -1 and half too when upward is not forced), so
// the proof covers sizes where the symbols differ (rows and classes). With
// an integer input (an index, a label: its random data is drawn from the
// values the launches passed) a symbol is never swept below the largest
// captured value, nor is an assignment below it kept: an index valid there
// stays in bounds only in a buffer at least as large.
func aroundEach(sweep []map[string]int64, syms []string, upward bool) []map[string]int64 {
	floor := map[string]int64{}
	if upward {
		for _, a := range sweep {
			for _, s := range syms {
				floor[s] = max(floor[s], a[s])
			}
		}
	}
	var out assignments
	add := func(a map[string]int64) {
		for _, s := range syms {
			if a[s] < 1 || a[s] < floor[s] {
				return
			}
		}
		out.add(a)
	}
	for _, a := range sweep {
		add(a)
	}
	for _, a := range sweep {
		for _, s := range syms {
			next := []int64{a[s] + 1, 2*a[s] + 1}
			if !upward {
				next = append(next, a[s]-1, a[s]/2)
			}
			for _, v := range next {
				b := maps.Clone(a)
				b[s] = max(v, floor[s])
				add(b)
			}
		}
	}
	return out.list
}

// hasIntInput reports whether the spec has an integer input buffer.
func hasIntInput(spec *Spec) bool {
	for _, p := range spec.Params {
		if p.Kind == "pointer" && p.Role == "input" && !p.Null && (strings.HasPrefix(p.DType, "int") || strings.HasPrefix(p.DType, "uint")) {
			return true
		}
	}
	return false
}

// shownApart reports whether the captured assignments show each symbol as a
// size of its own: every symbol takes two values or more, and no two are
// equal in every assignment. Otherwise a relation the launches never varied
// (tin_shift's shift of n·groups elements read as channels, all four
// launches alike) may be a coincidence, and sweeping one symbol alone could
// make the original read out of bounds.
func shownApart(sweep []map[string]int64, syms []string) bool {
	for x, s := range syms {
		vals := map[int64]bool{}
		for _, a := range sweep {
			vals[a[s]] = true
		}
		if len(vals) < 2 {
			return false
		}
		for _, t := range syms[x+1:] {
			apart := false
			for _, a := range sweep {
				apart = apart || a[s] != a[t]
			}
			if !apart {
				return false
			}
		}
	}
	return true
}

// dimSym is a size no scalar passes, read off a buffer's dim in a launch.
type dimSym struct {
	name string
	read func(CapturedLaunch) (int64, bool)
}

// splitDim decides a dim (read by size) that equals scalar c (value v) at
// launch l: when another launch shows it differs from c and it varies
// between the launches, it is a size of its own: the dim symbol of an
// earlier dim that it equals in every launch, or a new one named after the
// buffer (mmcv's sigmoid focal loss: the input's rows and the target's
// length equal num_classes = 2 at the first launch, 2 at 3 classes). When
// it differs from c but never varies: a literal. ok false: c it is.
func (sh *shaper) splitDim(l CapturedLaunch, others []CapturedLaunch, c int, v int64, size func(CapturedLaunch) (int64, bool), param string, j int) (*Expr, bool) {
	contradicted, varies := false, false
	for _, o := range others {
		n, ok := size(o)
		x, okX := scalarInt(o.Args[c])
		if !ok || !okX {
			return nil, false
		}
		contradicted = contradicted || n != x
		varies = varies || n != v
	}
	if !contradicted {
		return nil, false
	}
	if !varies {
		return Lit(v), true
	}
	for _, d := range sh.dimSyms {
		if same(l, others, d.read, size) {
			return Sym(d.name), true
		}
	}
	name := param + "_size"
	if j >= 0 {
		name = fmt.Sprintf("%s_dim%d", param, j)
	}
	for i, a := range l.Args {
		if argName(sh.k, a, i) == name || contains(sh.syms, name) {
			return nil, false
		}
	}
	sh.dimSyms = append(sh.dimSyms, dimSym{name: name, read: size})
	return Sym(name), true
}

// same reports whether two sizes agree in l and every other launch.
func same(l CapturedLaunch, others []CapturedLaunch, a, b func(CapturedLaunch) (int64, bool)) bool {
	for _, o := range append([]CapturedLaunch{l}, others...) {
		x, okX := a(o)
		y, okY := b(o)
		if !okX || !okY || x != y {
			return false
		}
	}
	return true
}

// productScalars makes each integer scalar that is no symbol a size when it
// is the product of two symbols in this launch and in every other one, one
// pair only, and the launches vary it (mmcv's nthreads = N · num_classes:
// 4, 6 and 9 at 2×2, 2×3 and 3×3): the sweep recomputes it with its
// factors.
func (sh *shaper) productScalars(others []CapturedLaunch) {
	envs := []map[string]int64{sh.env(sh.first)}
	for _, o := range others {
		envs = append(envs, sh.env(o))
	}
	for i, a := range sh.first.Args {
		if !isIntScalar(a) || contains(sh.syms, argName(sh.k, a, i)) {
			continue
		}
		var found *Expr
		n := 0
		for x, p := range sh.syms {
			for _, q := range sh.syms[x:] {
				ok, varies := true, false
				for e, env := range envs {
					l := sh.first
					if e > 0 {
						l = others[e-1]
					}
					v, okV := scalarInt(l.Args[i])
					pv, okP := env[p]
					qv, okQ := env[q]
					if !okV || !okP || !okQ || v != pv*qv {
						ok = false
						break
					}
					first, _ := scalarInt(sh.first.Args[i])
					varies = varies || v != first
				}
				if ok && varies {
					found, n = Bin("*", Sym(p), Sym(q)), n+1
				}
			}
		}
		if n == 1 {
			if sh.sizeExpr == nil {
				sh.sizeExpr = map[int]*Expr{}
			}
			sh.sizeExpr[i] = found
		}
	}
}

// splitShaper is the shaper with sizes of their own (shape with split) when
// some launch of the instance does not fit sh's relations and the split
// ones fit every launch, with no integer scalar left unexplained that
// changes between them; nil otherwise.
func splitShaper(k *Kernel, first CapturedLaunch, sh *shaper, others []CapturedLaunch) *shaper {
	misfit := false
	for _, o := range others {
		if _, ok := sh.fit(o); !ok {
			misfit = true
		}
	}
	if !misfit {
		return nil
	}
	sp, err := shape(k, first, others, true)
	if err != nil || len(sp.dimSyms) == 0 {
		return nil
	}
	hidden := sp.hiddenScalars()
	envs := []map[string]int64{sp.env(first)}
	for _, o := range others {
		env, ok := sp.fit(o)
		if !ok || !sameScalars(o, first, hidden) {
			return nil
		}
		envs = append(envs, env)
	}
	for _, d := range sp.dimSyms {
		if !sp.factor(d.name, envs) {
			return nil
		}
	}
	return sp
}

// factor reports whether size d is a factor of a product the launches
// pass: an integer scalar that is d times a symbol in every launch (a
// thread count over rows × classes). A size of its own that nothing the
// kernel is given relates to is more likely a launch that does not follow
// the kernel's relations (a buffer shorter than n) than a size.
func (sh *shaper) factor(d string, envs []map[string]int64) bool {
	for _, e := range sh.sizeExpr {
		if slices.Contains(e.Symbols(), d) {
			return true
		}
	}
	for _, s := range sh.syms {
		for _, q := range sh.syms {
			if s == d || s == q {
				continue
			}
			if productIn(envs, s, d, q) {
				return true
			}
		}
	}
	return false
}

// related reports whether a symbol is the product of two others in every
// assignment: a relation the sweep would break by varying one alone.
func related(sweep []map[string]int64, syms []string) bool {
	for _, s := range syms {
		for x, p := range syms {
			for _, q := range syms[x:] {
				if p == s || q == s {
					continue
				}
				if productIn(sweep, s, p, q) {
					return true
				}
			}
		}
	}
	return false
}

// productIn reports whether s is p times q in every assignment.
func productIn(envs []map[string]int64, s, p, q string) bool {
	for _, env := range envs {
		if env[s] != env[p]*env[q] {
			return false
		}
	}
	return true
}

// boundProducts keeps a product size (sizeExpr) within one block where the
// grid was captured as one block and the product fit in it, as oneBlock
// does for a symbol: a thread count past the block is a launch nobody made.
func (sh *shaper) boundProducts(spec *Spec) {
	bx := sh.block[0] * sh.block[1] * sh.block[2]
	if bx <= 1 || sh.grid[0].Op != "lit" || sh.grid[0].Val != 1 {
		return
	}
	env := sh.env(sh.first)
	for _, i := range slices.Sorted(maps.Keys(sh.sizeExpr)) {
		e := sh.sizeExpr[i]
		if v, err := e.Eval(env); err != nil || v > bx {
			continue
		}
		spec.Domain.Constraints = append(spec.Domain.Constraints, fmt.Sprintf("%s <= %d", e, bx))
		var keep []map[string]int64
		for _, a := range spec.Domain.Sweep {
			if v, err := e.Eval(a); err == nil && v <= bx {
				keep = append(keep, a)
			}
		}
		spec.Domain.Sweep = keep
	}
}
