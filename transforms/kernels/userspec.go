package kernels

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/pallasify/pallasify/transforms/repofs"
)

// UserSpecDir is where users put hand-written kernel specs, relative to the
// repository root: <UserSpecDir>/<id>.yaml.
const UserSpecDir = ".pallasify/kernels"

// UserSpecPath returns the repo-relative path of kernel id's user spec.
func UserSpecPath(id string) string { return path.Join(UserSpecDir, id+".yaml") }

// LoadUserSpec reads and validates .pallasify/kernels/<id>.yaml (or .yml /
// .json) for k. file is "" when there is no such file. When the file exists
// but is bad, spec is nil and problems carry PKN004 diagnostics.
func LoadUserSpec(root string, k *Kernel) (spec *Spec, file string, problems []Problem) {
	for _, ext := range []string{".yaml", ".yml", ".json"} {
		rel := path.Join(UserSpecDir, k.ID+ext)
		b, err := repofs.ReadFile(root, rel, maxSource)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			p := badSpec(rel, 0, k.ID, "cannot read: %s", readMessage(err))
			if refused(err) { // a link leading out of the repository
				p.Code, p.Severity = CodeOutside, "warning"
			}
			return nil, rel, []Problem{p}
		}
		s, probs := ParseUserSpec(rel, b, k)
		return s, rel, probs
	}
	return nil, "", nil
}

func badSpec(file string, line int, id, format string, a ...any) Problem {
	return Problem{Code: CodeBadSpec, Severity: "error", Path: file, Line: line, Kernel: id, Message: fmt.Sprintf(format, a...)}
}

// ParseUserSpec decodes a user spec (YAML, or JSON which is YAML) strictly and
// validates it against kernel k (k may be nil: then only the spec itself is
// checked). Missing schema, id, name and source are filled from k.
func ParseUserSpec(file string, data []byte, k *Kernel) (*Spec, []Problem) {
	id := ""
	if k != nil {
		id = k.ID
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, []Problem{badSpec(file, 0, id, "the file is empty")}
		}
		return nil, []Problem{badSpec(file, yamlLine(err), id, "not a valid spec: %s", strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	if s.Schema == "" {
		s.Schema = SpecSchema
	}
	if k != nil {
		if s.ID == "" {
			s.ID = k.ID
		}
		if s.Name == "" {
			s.Name = k.Name
		}
		if s.Source.Path == "" {
			s.Source = SpecSource{Path: k.Path, Line: k.Line, Origin: k.Origin}
		}
		if s.Class == "" {
			s.Class = k.Class
		}
	}
	var probs []Problem
	for _, msg := range ValidateSpec(&s, k) {
		probs = append(probs, badSpec(file, 0, id, "%s", msg))
	}
	if len(probs) > 0 {
		return nil, probs
	}
	return &s, nil
}

func yamlLine(err error) int {
	var line int
	msg := err.Error()
	if i := strings.Index(msg, "line "); i >= 0 {
		fmt.Sscanf(msg[i:], "line %d", &line)
	}
	return line
}

var (
	validRoles  = map[string]bool{"input": true, "output": true, "inout": true, "scalar": true, "size": true}
	validDTypes = map[string]bool{"float32": true, "float16": true, "bfloat16": true, "float64": true, "int32": true, "int64": true, "uint32": true, "uint8": true, "bool": true,
		"int8": true, "int16": true, "uint16": true, "uint64": true}
	validClasses = map[string]bool{ClassElementwise: true, ClassRowReduction: true, ClassMatmulTile: true, ClassTranspose: true, ClassScan: true, ClassHistogram: true, ClassStencil: true, ClassOther: true}
)

// ValidateSpec checks a spec for internal consistency and, when k has an
// isolated unit, against the kernel's signature. It returns one message per
// problem, each naming the field.
func ValidateSpec(s *Spec, k *Kernel) []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if s.Schema != SpecSchema {
		bad("schema: %q, want %q", s.Schema, SpecSchema)
	}
	if k != nil && s.ID != k.ID {
		bad("id: %q does not match the kernel id %q", s.ID, k.ID)
	}
	if k != nil && s.Name != k.Name {
		bad("name: %q does not match the kernel %q", s.Name, k.Name)
	}
	if s.Class != "" && !validClasses[s.Class] {
		bad("class: %q is not one of elementwise, row-reduction, matmul-tile, transpose, scan, histogram, stencil, other", s.Class)
	}
	syms := map[string]bool{}
	for _, sym := range s.Symbols {
		if identRE.FindString(sym) != sym || sym == "min" || sym == "max" {
			bad("symbols: %q is not an identifier", sym)
		}
		if syms[sym] {
			bad("symbols: %q listed twice", sym)
		}
		syms[sym] = true
	}
	checkExpr := func(field, e string, cmp bool) {
		x, err := ParseExpr(e)
		if err != nil {
			bad("%s: %v", field, err)
			return
		}
		if isComparison(x) != cmp {
			if cmp {
				bad("%s: %q is not a comparison", field, e)
			} else {
				bad("%s: %q is a comparison, want a size expression", field, e)
			}
		}
		for _, sym := range x.Symbols() {
			if !syms[sym] {
				bad("%s: symbol %q is not declared in symbols", field, sym)
			}
		}
	}
	if len(s.Params) == 0 {
		bad("params: none given")
	}
	names := map[string]bool{}
	outputs := 0
	for i, p := range s.Params {
		f := fmt.Sprintf("params[%d]", i)
		if p.Name == "" {
			bad("%s.name: missing", f)
		}
		if names[p.Name] {
			bad("%s.name: %q listed twice", f, p.Name)
		}
		names[p.Name] = true
		if !validDTypes[p.DType] {
			bad("%s.dtype: %q is not one of float32, float16, bfloat16, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool", f, p.DType)
		}
		if !validRoles[p.Role] {
			bad("%s.role: %q is not one of input, output, inout, scalar, size", f, p.Role)
		}
		switch p.Kind {
		case "pointer":
			if p.Role != "input" && p.Role != "output" && p.Role != "inout" {
				bad("%s.role: a pointer is input, output or inout, not %q", f, p.Role)
			}
			if len(p.Shape) == 0 {
				bad("%s.shape: a pointer needs a shape", f)
			}
			for j, d := range p.Shape {
				checkExpr(fmt.Sprintf("%s.shape[%d]", f, j), d, false)
			}
			if p.Role == "output" || p.Role == "inout" {
				outputs++
			}
			if p.Null && (p.Role != "input" || len(p.Shape) != 1 || strings.TrimSpace(p.Shape[0]) != "0") {
				bad("%s.null: a NULL pointer is an input of shape [\"0\"]", f)
			}
		case "scalar":
			if p.Role != "scalar" && p.Role != "size" {
				bad("%s.role: a scalar is scalar or size, not %q", f, p.Role)
			}
			if p.Role == "size" {
				if p.Expr == "" {
					bad("%s.expr: a size parameter needs an expression", f)
				} else {
					checkExpr(f+".expr", p.Expr, false)
				}
			}
			if len(p.Range) != 0 && (len(p.Range) != 2 || p.Range[0] > p.Range[1]) {
				bad("%s.range: want [lo, hi] with lo <= hi", f)
			}
			if p.Null {
				bad("%s.null: only a pointer can be NULL", f)
			}
		default:
			bad("%s.kind: %q is not pointer or scalar", f, p.Kind)
		}
		if len(p.IntRange) != 0 && (len(p.IntRange) != 2 || p.IntRange[0] >= p.IntRange[1]) {
			bad("%s.int_range: want [lo, hi) with lo < hi", f)
		}
	}
	if len(s.Params) > 0 && outputs == 0 {
		bad("params: no output or inout pointer; nothing to compare")
	}
	for i := range 3 {
		checkExpr(fmt.Sprintf("launch.grid[%d]", i), s.Launch.Grid[i], false)
		checkExpr(fmt.Sprintf("launch.block[%d]", i), s.Launch.Block[i], false)
	}
	if s.Launch.SharedBytes == "" {
		s.Launch.SharedBytes = "0"
	}
	checkExpr("launch.shared_bytes", s.Launch.SharedBytes, false)
	for i, c := range s.Domain.Constraints {
		checkExpr(fmt.Sprintf("domain.constraints[%d]", i), c, true)
	}
	for i, sw := range s.Domain.Sweep {
		for sym := range sw {
			if !syms[sym] {
				bad("domain.sweep[%d]: symbol %q is not declared", i, sym)
			}
		}
		for _, sym := range s.Symbols {
			if _, ok := sw[sym]; !ok {
				bad("domain.sweep[%d]: symbol %q has no value", i, sym)
			}
		}
	}
	for sym := range s.Domain.Max {
		if !syms[sym] {
			bad("domain.max: symbol %q is not declared", sym)
		}
	}
	if s.Tolerance != nil && (s.Tolerance.RTol < 0 || s.Tolerance.ATol < 0) {
		bad("tolerance: rtol and atol must be >= 0")
	}
	if s.Tolerance != nil && s.Note == "" {
		bad("tolerance: an explicit tolerance must be justified in note")
	}
	// against the kernel's signature
	if k != nil && k.Unit != nil && k.sig != nil {
		if len(k.sig) != len(s.Params) {
			bad("params: %d given, the kernel %s takes %d", len(s.Params), k.Name, len(k.sig))
		} else {
			for i, kp := range k.sig {
				p := s.Params[i]
				if p.Name != kp.name {
					bad("params[%d].name: %q, the kernel's parameter %d is %q", i, p.Name, i+1, kp.name)
				}
				if (p.Kind == "pointer") != kp.pointer {
					bad("params[%d].kind: %q, but %s is declared %s", i, p.Kind, kp.name, kp.ctype)
				}
				if p.CType == "" {
					s.Params[i].CType = kp.ctype
				}
			}
		}
	}
	return out
}
