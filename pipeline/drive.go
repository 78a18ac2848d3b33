package pipeline

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/repofs"
)

// The op driver: specs by execution without the repository's tests. For an
// extension that builds for the CPU, every op its Python side can call (the
// pybind11 m.def names, load_inline's functions=) is called inside the
// sandbox with inputs synthesised from the op's C++ signature, and the host
// code's own checks are the feedback: when a TORCH_CHECK / AT_ASSERT /
// assert rejects the inputs, the driver reads the check's condition (from
// the message, or the source's check with that message) and adjusts the
// inputs (rank, a size, a dtype), a bounded number of tries. An op that runs
// is run again in the half and bfloat16 dtypes its host code dispatches on
// and on a non-contiguous view. The launches are captured exactly as the
// repository's tests' are and become the kernels' specs (spec source
// "driven"); an op that does not run says why with a CAP-DRIVE-* code.
//
// The Python is pipeline/drive_driver.py, a template whose only hole is the
// JSON configuration this file writes.

// SpecDriven is the spec source of a CUDA kernel whose spec was captured
// while the op driver called its op with synthesised inputs (the Triton
// drive's is SpecTritonDriven, the same word).
const SpecDriven = "driven"

// Op-driver codes: why an op (and the kernels only it launches) got no
// captured spec from the driver.
const (
	CodeDriveNoOps     = "CAP-DRIVE-NO-OPS"    // the extension exports no op the driver can find
	CodeDriveSignature = "CAP-DRIVE-SIGNATURE" // an argument type the driver cannot synthesise
	CodeDriveCheck     = "CAP-DRIVE-CHECK"     // a host check the driver could not satisfy
	CodeDriveFailed    = "CAP-DRIVE-FAILED"    // the op raised something that is not a host check
	CodeDriveBudget    = "CAP-DRIVE-BUDGET"    // the op's or the extension's time budget ran out
	CodeDriveImport    = "CAP-DRIVE-IMPORT"    // the built module does not import, or lacks the op
)

//go:embed drive_driver.py
var driverTemplateText string

var driverTemplate = template.Must(template.New("drive").Delims("{{", "}}").Parse(driverTemplateText))

// driveOp is one op of an extension as the driver calls it.
type driveOp struct {
	Name   string       `json:"name"`
	Params []driveParam `json:"params"`
	// Dtypes are the reduced-precision dtypes (float16, bfloat16) the host
	// code dispatches on, run after float32.
	Dtypes []string `json:"dtypes,omitempty"`
	// Unsupported names the argument the driver cannot synthesise.
	Unsupported string `json:"unsupported,omitempty"`
	// Kernels are the kernels the op's host code (and the functions it
	// calls) launches, read statically: only used to say why a kernel was
	// not launched.
	Kernels []string `json:"-"`
}

// driveParam is one argument: its kind (tensor, tensors, int, float, bool,
// str, ints, none), the rank its host code indexes (tensors) or the value
// (scalars).
type driveParam struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Rank  int    `json:"rank,omitempty"`
	Value any    `json:"value,omitempty"`
}

// driveCheck is one host check: its condition and its longest message
// literal (what a failure's message contains).
type driveCheck struct {
	Cond    string `json:"cond"`
	Message string `json:"message,omitempty"`
}

// driveRecord is what the driver wrote for one op (drive.json).
type driveRecord struct {
	Op       string   `json:"op"`
	Status   string   `json:"status"` // ok | failed
	Code     string   `json:"code,omitempty"`
	Error    string   `json:"error,omitempty"`
	Check    string   `json:"check,omitempty"`
	Variants []string `json:"variants,omitempty"`
	Adjusted []string `json:"adjusted,omitempty"`
	Refused  []string `json:"refused,omitempty"`
	Tries    int      `json:"tries,omitempty"`
}

// driveConfig is the driver's configuration (CONFIG in drive_driver.py).
type driveConfig struct {
	Module   string       `json:"module"`
	Inline   *driveInline `json:"inline,omitempty"`
	Ops      []driveOp    `json:"ops"`
	Checks   []driveCheck `json:"checks"`
	MaxTries int          `json:"max_tries"`
	OpS      float64      `json:"op_s"`
	TotalS   float64      `json:"total_s"`
}

type driveInline struct {
	Name      string   `json:"name"`
	CPP       []string `json:"cpp"`
	CUDA      []string `json:"cuda"`
	Functions []string `json:"functions"`
}

// Default bounds of the driver: tries per op, seconds per op and per
// extension (the sandbox's wall limit is the extension's plus a margin).
const (
	driveMaxTries = 8
	driveOpTime   = 60 * time.Second
	driveAllTime  = 4 * time.Minute
)

// driverSource is the Python of the driver for ext's ops.
func driverSource(ext *kernels.Extension, ops []driveOp, checks []driveCheck, opTime, allTime time.Duration) (string, error) {
	cfg := driveConfig{Module: ext.Module, Ops: ops, Checks: checks, MaxTries: driveMaxTries,
		OpS: opTime.Seconds(), TotalS: allTime.Seconds()}
	if ext.Origin == kernels.OriginLoadInline {
		cfg.Inline = &driveInline{Name: ext.Module, CPP: ext.CPP, CUDA: ext.CUDA, Functions: ext.Functions}
	}
	if cfg.Checks == nil {
		cfg.Checks = []driveCheck{}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	if err := driverTemplate.Execute(&out, map[string]string{"Config": pyStr(string(b))}); err != nil {
		return "", err
	}
	return out.String(), nil
}

// isDriverEntry reports whether entry runs the op driver.
func isDriverEntry(entry []string) bool {
	return len(entry) == 2 && entry[0] == "-c" && strings.HasPrefix(entry[1], "# pallasify op driver")
}

// readDriveRecords reads drive.json from a capture dir (nil when the
// driver wrote none: the sandbox stopped it before the first op ended).
func readDriveRecords(dir string) []driveRecord {
	b, err := repofs.ReadFile(dir, "drive.json", 0)
	if err != nil {
		return nil
	}
	var recs []driveRecord
	if json.Unmarshal(b, &recs) != nil {
		return nil
	}
	return recs
}

// cxxSources is the C++ of ext as one text per file, comments removed.
func cxxSources(root string, ext *kernels.Extension) []string {
	var out []string
	if ext.Origin == kernels.OriginLoadInline {
		for _, s := range append(append([]string(nil), ext.CPP...), ext.CUDA...) {
			out = append(out, stripCxxComments(s))
		}
		return out
	}
	for _, f := range ext.Sources {
		b, err := repofs.ReadFile(root, f, DefaultMaxFileBytes)
		if err == nil {
			out = append(out, stripCxxComments(string(b)))
		}
	}
	return out
}

// driveOps lists the ops of ext with their synthesised arguments, and the
// host checks of its sources.
func driveOps(root string, ext *kernels.Extension, kernelNames []string) ([]driveOp, []driveCheck) {
	srcs := cxxSources(root, ext)
	defs := cxxFunctions(srcs)
	type export struct{ name, fn string }
	var exports []export
	if ext.Origin == kernels.OriginLoadInline {
		for _, f := range ext.Functions {
			exports = append(exports, export{f, f})
		}
	}
	for _, s := range srcs {
		for _, m := range pybindDefRE.FindAllStringSubmatch(s, -1) {
			fn := m[2]
			if i := strings.LastIndex(fn, "::"); i >= 0 {
				fn = fn[i+2:]
			}
			exports = append(exports, export{m[1], fn})
		}
	}
	var ops []driveOp
	seen := map[string]bool{}
	for _, e := range exports {
		if seen[e.name] {
			continue
		}
		seen[e.name] = true
		op := driveOp{Name: e.name}
		d := defs[e.fn]
		if d == nil {
			op.Unsupported = "no definition of " + e.fn + " in the extension's sources"
			ops = append(ops, op)
			continue
		}
		body := reachable(defs, e.fn, 3)
		for _, p := range splitTopLevel(d.params) {
			dp, bad := synthParam(p, body) // the sizes indexed where the op passes its tensors on, too
			if bad != "" && op.Unsupported == "" {
				op.Unsupported = bad
			}
			op.Params = append(op.Params, dp)
		}
		op.Dtypes = dispatchDtypes(body)
		for _, k := range kernelNames {
			if regexp.MustCompile(`\b` + regexp.QuoteMeta(k) + `\b[^;]*?<<<`).MatchString(body) {
				op.Kernels = append(op.Kernels, k)
			}
		}
		ops = append(ops, op)
	}
	var checks []driveCheck
	for _, s := range srcs {
		checks = append(checks, hostChecks(s)...)
	}
	return ops, checks
}

var (
	pybindDefRE   = regexp.MustCompile(`\b\w+\.def\(\s*"(\w+)"\s*,\s*(?:torch::wrap_pybind_function\(\s*)?&?\s*([A-Za-z_][\w:]*)\s*[,)]`)
	checkCallRE   = regexp.MustCompile(`\b(TORCH_CHECK|AT_ASSERTM|AT_ASSERT|TORCH_INTERNAL_ASSERT|assert)\s*\(`)
	funcHeadRE    = regexp.MustCompile(`\b([A-Za-z_]\w*)\s*\(`)
	rankUseRE     = regexp.MustCompile(`\b([A-Za-z_]\w*)\s*\.\s*(?:size|stride)\s*\(\s*(\d+)\s*\)|\b([A-Za-z_]\w*)\s*\.\s*sizes\s*\(\s*\)\s*\[\s*(\d+)\s*\]`)
	dispatchRE    = regexp.MustCompile(`\bAT_DISPATCH_(\w+)\s*\(([^\[{]*)`)
	cxxKeywords   = map[string]bool{"if": true, "for": true, "while": true, "switch": true, "catch": true, "return": true, "sizeof": true, "decltype": true}
	stringLitRE   = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
	identifierRE  = regexp.MustCompile(`[A-Za-z_]\w*$`)
	callIdentRE   = regexp.MustCompile(`\b([A-Za-z_]\w*)\s*(?:<[^;<>()]*>)?\s*\(`)
	floatTypeRE   = regexp.MustCompile(`^(const\s+)?(double|float)\s*&?$`)
	intTypeRE     = regexp.MustCompile(`^(const\s+)?(int64_t|int32_t|int|long|long long|unsigned|unsigned int|size_t|uint32_t|uint64_t|c10::SymInt)\s*&?$`)
	boolTypeRE    = regexp.MustCompile(`^(const\s+)?bool\s*&?$`)
	intsTypeRE    = regexp.MustCompile(`(IntArrayRef|std::vector<\s*(int64_t|int|long)\s*>|SymIntArrayRef)`)
	tensorsTypeRE = regexp.MustCompile(`(TensorList|std::vector<\s*(at::|torch::)?Tensor\s*>)`)
	tensorTypeRE  = regexp.MustCompile(`^(const\s+)?(at::|torch::)?Tensor\s*&?$`)
	stringTypeRE  = regexp.MustCompile(`^(const\s+)?(std::string|c10::string_view|std::string_view)\s*&?$`)
	optionalRE    = regexp.MustCompile(`^(const\s+)?(c10::|std::|at::|torch::)?optional<`)
)

// cxxFunc is a function definition: its parameter list and body.
type cxxFunc struct{ params, body string }

// cxxFunctions indexes the function definitions of srcs by name (the first
// definition wins; overloads are not told apart).
func cxxFunctions(srcs []string) map[string]*cxxFunc {
	out := map[string]*cxxFunc{}
	for _, s := range srcs {
		for _, m := range funcHeadRE.FindAllStringSubmatchIndex(s, -1) {
			name := s[m[2]:m[3]]
			if cxxKeywords[name] || out[name] != nil {
				continue
			}
			// the token before the name must end a type: not a member call, an operator or an assignment
			pre := strings.TrimRight(s[:m[2]], " \t\n")
			if pre == "" || strings.HasSuffix(pre, ".") || strings.HasSuffix(pre, "->") || strings.HasSuffix(pre, "=") ||
				strings.HasSuffix(pre, "(") || strings.HasSuffix(pre, ",") || strings.HasSuffix(pre, "return") {
				continue
			}
			open := m[1] - 1
			close := matchClose(s, open, '(', ')')
			if close < 0 {
				continue
			}
			rest := s[close+1:]
			trim := strings.TrimLeft(rest, " \t\n")
			for _, q := range []string{"const", "noexcept", "override"} {
				trim = strings.TrimLeft(strings.TrimPrefix(trim, q), " \t\n")
			}
			if !strings.HasPrefix(trim, "{") {
				continue
			}
			bo := len(s) - len(trim)
			bc := matchClose(s, bo, '{', '}')
			if bc < 0 {
				continue
			}
			out[name] = &cxxFunc{params: s[open+1 : close], body: s[bo : bc+1]}
		}
	}
	return out
}

// reachable is fn's body and the bodies of the functions it calls, depth
// levels down.
func reachable(defs map[string]*cxxFunc, fn string, depth int) string {
	seen := map[string]bool{fn: true}
	var b strings.Builder
	level := []string{fn}
	for d := 0; d <= depth && len(level) > 0; d++ {
		var next []string
		for _, f := range level {
			body := defs[f].body
			b.WriteString(body)
			b.WriteByte('\n')
			for _, m := range callIdentRE.FindAllStringSubmatch(body, -1) {
				if c := m[1]; !seen[c] && defs[c] != nil {
					seen[c] = true
					next = append(next, c)
				}
			}
		}
		level = next
	}
	return b.String()
}

// synthParam describes one C++ parameter ("const at::Tensor& x", "double
// eps = 1e-5") for the driver, or says why it cannot.
func synthParam(p, body string) (driveParam, string) {
	p = strings.TrimSpace(p)
	if i := strings.Index(p, "="); i >= 0 {
		p = strings.TrimSpace(p[:i])
	}
	name := identifierRE.FindString(p)
	typ := strings.TrimSpace(strings.TrimSuffix(p, name))
	typ = strings.Join(strings.Fields(typ), " ")
	typ = strings.ReplaceAll(strings.ReplaceAll(typ, " &", "&"), " *", "*")
	dp := driveParam{Name: name}
	switch {
	case name == "" || typ == "":
		dp.Kind = "none"
		return dp, "parameter " + strconv.Quote(p) + " has no type and name"
	case optionalRE.MatchString(typ):
		dp.Kind = "none"
	case tensorsTypeRE.MatchString(typ):
		dp.Kind, dp.Rank = "tensors", 0
	case tensorTypeRE.MatchString(typ):
		dp.Kind, dp.Rank = "tensor", tensorRank(name, body)
	case boolTypeRE.MatchString(typ):
		dp.Kind, dp.Value = "bool", false
	case intTypeRE.MatchString(typ):
		dp.Kind, dp.Value = "int", intDefault(name)
	case floatTypeRE.MatchString(typ):
		dp.Kind, dp.Value = "float", floatDefault(name)
	case intsTypeRE.MatchString(typ):
		dp.Kind, dp.Value = "ints", []int{1, 1}
	case stringTypeRE.MatchString(typ):
		dp.Kind, dp.Value = "str", ""
	default:
		dp.Kind = "none"
		return dp, "argument " + name + " of type " + typ + " cannot be synthesised"
	}
	return dp, ""
}

// tensorRank is the rank the host code indexes tensor name at (x.size(3):
// 4), 0 when it indexes none.
func tensorRank(name, body string) int {
	r := 0
	for _, m := range rankUseRE.FindAllStringSubmatch(body, -1) {
		n, idx := m[1], m[2]
		if n == "" {
			n, idx = m[3], m[4]
		}
		if n != name {
			continue
		}
		if i, err := strconv.Atoi(idx); err == nil && i+1 > r && i < 8 {
			r = i + 1
		}
	}
	return r
}

// intDefault is an integer argument's value by its name's role.
func intDefault(name string) int {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "dim") || strings.Contains(n, "axis"):
		return -1
	case strings.Contains(n, "pad") || strings.Contains(n, "offset") || strings.Contains(n, "start"):
		return 0
	case strings.Contains(n, "kernel") || strings.Contains(n, "window"):
		return 3
	}
	return 1
}

// floatDefault is a floating argument's value by its name's role.
func floatDefault(name string) float64 {
	n := strings.ToLower(name)
	if strings.Contains(n, "eps") {
		return 1e-5
	}
	return 0.5
}

// dispatchDtypes are the reduced-precision dtypes the AT_DISPATCH macros of
// body list (…_AND_HALF, …_AND2(at::ScalarType::Half, at::ScalarType::BFloat16),
// AT_DISPATCH_REDUCED_FLOATING_TYPES).
func dispatchDtypes(body string) []string {
	var out []string
	for _, m := range dispatchRE.FindAllStringSubmatch(body, -1) {
		head := m[1] + " " + m[2]
		if strings.Contains(head, "HALF") || strings.Contains(head, "Half") || strings.Contains(head, "REDUCED_FLOATING") {
			out = appendUniqStr(out, "float16")
		}
		if strings.Contains(head, "BFloat16") || strings.Contains(head, "BFLOAT16") || strings.Contains(head, "REDUCED_FLOATING") {
			out = appendUniqStr(out, "bfloat16")
		}
	}
	sort.Strings(out)
	return out
}

// hostChecks are the TORCH_CHECK / AT_ASSERT / assert calls of src.
func hostChecks(src string) []driveCheck {
	var out []driveCheck
	for _, m := range checkCallRE.FindAllStringIndex(src, -1) {
		open := m[1] - 1
		close := matchClose(src, open, '(', ')')
		if close < 0 {
			continue
		}
		args := splitTopLevel(src[open+1 : close])
		if len(args) == 0 {
			continue
		}
		c := driveCheck{Cond: strings.Join(strings.Fields(args[0]), " ")}
		for _, a := range args[1:] {
			for _, lit := range stringLitRE.FindAllStringSubmatch(a, -1) {
				if s, err := strconv.Unquote(`"` + lit[1] + `"`); err == nil && len(s) > len(c.Message) {
					c.Message = strings.TrimSpace(s)
				}
			}
		}
		if len(c.Message) < 4 {
			c.Message = ""
		}
		out = append(out, c)
	}
	return out
}

// matchClose is the index of the bracket closing the one at open, skipping
// string and character literals; -1 when there is none.
func matchClose(s string, open int, o, c byte) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '"', '\'':
			q := s[i]
			for i++; i < len(s) && s[i] != q; i++ {
				if s[i] == '\\' {
					i++
				}
			}
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

// splitTopLevel splits a parameter or argument list at its top-level
// commas (not inside <>, (), [], {} or a literal).
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\'':
			q := s[i]
			for i++; i < len(s) && s[i] != q; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '(', '[', '{', '<':
			depth++
		case ')', ']', '}', '>':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if t := strings.TrimSpace(s[start:]); t != "" && t != "void" {
		out = append(out, t)
	}
	return out
}

// stripCxxComments blanks // and /* */ comments (literals kept).
func stripCxxComments(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"' || s[i] == '\'':
			q := s[i]
			j := i + 1
			for ; j < len(s) && s[j] != q && s[j] != '\n'; j++ {
				if s[j] == '\\' {
					j++
				}
			}
			if j >= len(s) {
				j = len(s) - 1
			}
			b.WriteString(s[i : j+1])
			i = j
		case strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
			b.WriteByte('\n')
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return b.String()
			}
			b.WriteString(strings.Repeat("\n", strings.Count(s[i:i+2+end+2], "\n")))
			i += 2 + end + 1
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// driveReason says why kernel name got no spec from the driver's run of
// ops, with a code: the failure of the op that launches it (statically),
// else of every op, else that the ops that ran did not launch it.
func driveReason(name string, ops []driveOp, recs []driveRecord) (code, text string) {
	byOp := map[string]driveRecord{}
	for _, r := range recs {
		byOp[r.Op] = r
	}
	var mine []string
	for _, o := range ops {
		for _, k := range o.Kernels {
			if k == name {
				mine = append(mine, o.Name)
			}
		}
	}
	describe := func(r driveRecord) string {
		s := "op " + r.Op + ": " + r.Error
		if r.Check != "" && !strings.Contains(r.Error, r.Check) {
			s += " (check " + r.Check + ")"
		}
		return s
	}
	for _, op := range mine {
		if r, ok := byOp[op]; ok && r.Status != "ok" && r.Code != "" {
			return r.Code, describe(r)
		}
		if _, ok := byOp[op]; !ok {
			return CodeDriveBudget, "op " + op + " was not reached: the driver stopped before it"
		}
	}
	var ran, failed []string
	var firstFail *driveRecord
	for i, r := range recs {
		if r.Status == "ok" {
			ran = append(ran, r.Op)
		} else {
			failed = append(failed, r.Op)
			if firstFail == nil {
				firstFail = &recs[i]
			}
		}
	}
	if len(ran) == 0 && firstFail != nil && firstFail.Code != "" {
		return firstFail.Code, describe(*firstFail)
	}
	text = fmt.Sprintf("the op driver ran %d op%s (%s), none launched %s", len(ran), plural(len(ran), "", "s"), strings.Join(ran, ", "), name)
	if len(mine) == 0 {
		text += "; no op's host code launches it"
	}
	if len(failed) > 0 {
		text += "; failed: " + strings.Join(failed, ", ")
	}
	return CodeCaptureNotLaunched, text
}

// DriveCodes documents the CAP-DRIVE codes.
func DriveCodes() []CodeDoc {
	return []CodeDoc{
		{CodeDriveNoOps, "drive-no-ops", SevInfo, "The extension exports no op the driver can call",
			"The extension built for the CPU, but no pybind11 m.def(\"name\", &fn) and no load_inline functions= names " +
				"an op, so there is nothing to call with synthesised inputs (TORCH_LIBRARY ops are not driven yet). Its " +
				"kernels' specs come from the repository's tests (--capture), a spec file or static inference."},
		{CodeDriveSignature, "drive-signature", SevInfo, "An op takes an argument the driver cannot synthesise",
			"The op's C++ signature has a parameter whose type is none of at::Tensor, a tensor list, an integer, a " +
				"floating or bool scalar, an integer list, a string or an optional (a pybind object, a custom struct), " +
				"its definition is not in the extension's sources, or pybind rejected the synthesised arguments. The " +
				"parameter is named. Write a test that calls the op, or a spec file."},
		{CodeDriveCheck, "drive-check", SevInfo, "A host check rejected every input the driver tried",
			"The op's host code checks its inputs (TORCH_CHECK, AT_ASSERT, assert) and the driver could not adjust the " +
				"synthesised inputs to pass the check within its tries: the condition is not one it reads (a rank, a " +
				"size equal to a literal or to another tensor's, a multiple, a dtype, the same shape as another input), " +
				"or adjusting for one check broke another. The check's condition and message are named."},
		{CodeDriveFailed, "drive-failed", SevInfo, "The op failed on synthesised inputs",
			"The op raised an error that is not one of its host checks (an out-of-range index, an emulator error, a " +
				"missing symbol) when called with the driver's inputs. The first line of the error is given."},
		{CodeDriveBudget, "drive-budget", SevInfo, "The op driver's time ran out",
			"Each op gets a bounded time (60 s) and each extension a bounded total (4 min) on the CPU emulator; the op " +
				"was not reached, or did not finish, within it. A smaller default input cannot be chosen for it."},
		{CodeDriveImport, "drive-import", SevWarning, "The built module does not import or lacks the op",
			"The CPU build succeeded, but importing it under its module name failed, or the module has no attribute " +
				"with the op's name. The import error is given."},
	}
}

// driven is what the op driver did for one extension.
type driven struct {
	ops      []driveOp
	recs     []driveRecord
	launches []kernels.CapturedLaunch
	failure  string // the run itself failed (no records): why
}

// reason is driveReason for kernel name, or the run's failure.
func (d *driven) reason(name string) (string, string) {
	switch {
	case len(d.ops) == 0:
		return CodeDriveNoOps, "no pybind11 m.def or load_inline functions= names an op of the extension"
	case len(d.recs) == 0 && strings.HasPrefix(d.failure, "SBX-TIME"):
		return CodeDriveBudget, "the sandbox stopped the op driver before its first op ended: " + d.failure
	case len(d.recs) == 0 && d.failure != "":
		return CodeDriveFailed, "the op driver failed: " + d.failure
	case len(d.recs) == 0:
		return CodeDriveFailed, "the op driver wrote no record of its ops"
	}
	return driveReason(name, d.ops, d.recs)
}

// drive runs the op driver over ext's ops when one of mine has no spec from
// launches (the tests'); nil when the driver is off or not needed.
func (c *CaptureStage) drive(ctx context.Context, root string, files []string, built *BuiltExtension, ext *kernels.Extension,
	mine []*kernels.Kernel, launches []kernels.CapturedLaunch) *driven {
	if c.NoDrive || ctx.Err() != nil {
		return nil
	}
	var names []string
	need := false
	for _, k := range mine {
		names = appendUniqStr(names, k.Name)
		if _, _, err := kernels.SpecFromLaunches(k, launches); err != nil {
			need = true
		}
	}
	if !need {
		return nil
	}
	d := &driven{}
	ops, checks := driveOps(root, ext, names)
	d.ops = ops
	if len(ops) == 0 {
		return d
	}
	opTime, allTime := c.DriveOpTime, c.DriveTime
	if opTime <= 0 {
		opTime = driveOpTime
	}
	if allTime <= 0 {
		allTime = driveAllTime
	}
	src, err := driverSource(ext, ops, checks, opTime, allTime)
	if err != nil {
		d.failure = err.Error()
		return d
	}
	c.count(func(s *CaptureStats) { s.Drives++ })
	ls, res, err := c.captureFor(ctx, root, files, built, []string{"-c", src}, nil, allTime+time.Minute)
	if err != nil {
		d.failure = oneLine(err.Error())
		return d
	}
	d.launches = ls
	d.recs = readDriveRecords(res.Dir)
	if res.ExitCode != 0 {
		d.failure = lastErrorLine(res.Output)
		if res.Stopped != "" {
			d.failure = res.Stopped
		}
	}
	return d
}
