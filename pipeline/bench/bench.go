// Package bench writes pallasify_bench.py (`pallasify migrate --bench`): a
// script the user keeps beside their code that builds their model, feeds it
// a synthetic batch and times a training or inference step on whatever
// device the host has (CUDA, TPU, the CPU; chosen at run time the way the
// migrated code chooses it), printing wall time per step (median, p90),
// items per second, peak memory where the device reports it and the cost
// per million items at a given hourly price.
//
// The Python is bench.py.tmpl, a text/template whose holes are Python
// literals this package prints (the models to try, the defaults the user
// configured, the import roots) and the portable device expression the
// device rules write (kit.DeviceExpr). Which models to try is read from the
// tree (Scan): what the top package exports, what entry scripts call, the
// factories and model classes the repository defines.
package bench

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/pallasify/pallasify/transforms/pallas"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

// FileName is the script's name.
const FileName = "pallasify_bench.py"

// Steps the script times by default, after Warmup untimed ones.
const (
	DefaultSteps     = 20
	DefaultWarmup    = 3
	DefaultBatchSize = 8
)

// Config is what the user may set (pallasify.yaml `bench:`, the CLI): every
// zero value means the script's default.
type Config struct {
	// Model is "package.module:name", a factory or a model class; the only
	// model the script tries when set.
	Model string `yaml:"model" json:"model,omitempty"`
	// Step is train (forward, loss, backward, optimizer step; the default)
	// or infer (forward under torch.no_grad).
	Step string `yaml:"step" json:"step,omitempty"`
	// InputShape is one item's shape (the batch dimension excluded).
	InputShape []int `yaml:"input_shape" json:"input_shape,omitempty"`
	BatchSize  int   `yaml:"batch_size" json:"batch_size,omitempty"`
	Steps      int   `yaml:"steps" json:"steps,omitempty"`
	Warmup     int   `yaml:"warmup" json:"warmup,omitempty"`
}

var refRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// Problem is one thing wrong with a Config: its field's YAML name and why.
type Problem struct{ Key, Message string }

// Check reports what is wrong with c, in field order.
func (c Config) Check() []Problem {
	var probs []Problem
	if c.Model != "" && !refRE.MatchString(c.Model) {
		probs = append(probs, Problem{"model",
			fmt.Sprintf("%q is not \"package.module:name\" (a factory function or a model class)", c.Model)})
	}
	switch c.Step {
	case "", "train", "infer":
	default:
		probs = append(probs, Problem{"step", fmt.Sprintf("%q: want train or infer", c.Step)})
	}
	for _, n := range c.InputShape {
		if n <= 0 {
			probs = append(probs, Problem{"input_shape", "every dimension must be positive"})
			break
		}
	}
	for _, f := range []struct {
		key string
		n   int
	}{{"batch_size", c.BatchSize}, {"steps", c.Steps}, {"warmup", c.Warmup}} {
		if f.n < 0 {
			probs = append(probs, Problem{f.key, "must not be negative"})
		}
	}
	return probs
}

// Candidate is a model the script tries: Ref is "module:name", Why a few
// words on where it was found (a comment beside it in the script).
type Candidate struct {
	Ref string `json:"ref"`
	Why string `json:"why,omitempty"`
}

// Script is one benchmark script to write.
type Script struct {
	// Dir is the script's directory, slash-separated and relative to the
	// repository root ("." for the root).
	Dir string
	// ImportRoots are the directories the repository's modules are imported
	// from, relative to the root ("." and, for a src layout, "src").
	ImportRoots []string
	// Candidates are the models tried in order when Config.Model is unset.
	Candidates []Candidate
	Config
	// LineLength is the repository's line limit the script is formatted to.
	LineLength int
}

// Path is where the script goes, relative to the root.
func (s Script) Path() string { return path.Join(s.Dir, FileName) }

// Command is how the script is run from the repository root.
func (s Script) Command() string { return "python " + s.Path() }

//go:embed bench.py.tmpl
var templateText string

var scriptTemplate = template.Must(template.New("bench").Parse(templateText))

// Render returns the script's Python, formatted with the pinned ruff at the
// repository's line length (unformatted where that ruff is missing: the
// template is written as ruff formats it at 88 columns).
func (s Script) Render(ctx context.Context) ([]byte, error) {
	width := s.LineLength
	if width <= 0 {
		width = 88
	}
	roots := make([]string, 0, len(s.ImportRoots))
	for _, r := range s.ImportRoots {
		roots = append(roots, relTo(s.Dir, r))
	}
	if len(roots) == 0 {
		roots = append(roots, relTo(s.Dir, "."))
	}
	step := s.Step
	if step == "" {
		step = "train"
	}
	orInt := func(v, def int) string {
		if v > 0 {
			return strconv.Itoa(v)
		}
		return strconv.Itoa(def)
	}
	model := "None"
	if s.Model != "" {
		model = pyStr(s.Model)
	}
	shape := "None"
	if len(s.InputShape) > 0 {
		parts := make([]string, len(s.InputShape))
		for i, n := range s.InputShape {
			parts[i] = strconv.Itoa(n)
		}
		shape = "(" + strings.Join(parts, ", ")
		if len(parts) == 1 {
			shape += ","
		}
		shape += ")"
	}
	data := map[string]string{
		"Command":     s.Path(),
		"ImportRoots": pyList(roots, nil, 0),
		"Models":      pyList(refs(s.Candidates), whys(s.Candidates), width),
		"Model":       model,
		"Step":        pyStr(step),
		"BatchSize":   orInt(s.BatchSize, DefaultBatchSize),
		"InputShape":  shape,
		"Steps":       orInt(s.Steps, DefaultSteps),
		"Warmup":      orInt(s.Warmup, DefaultWarmup),
		"DeviceExpr":  indent(kit.DeviceExpr, "    "),
	}
	var out bytes.Buffer
	if err := scriptTemplate.Execute(&out, data); err != nil {
		return nil, fmt.Errorf("bench script: %w", err)
	}
	return []byte(pallas.FormatPythonWidth(ctx, out.String(), width)), nil
}

// relTo is the path of root (relative to the repository root) as seen from
// dir (also relative to it).
func relTo(dir, root string) string {
	dir, root = path.Clean(dir), path.Clean(root)
	up := ""
	for d := dir; d != "."; d = path.Dir(d) {
		up += "../"
	}
	if root == "." {
		if up == "" {
			return "."
		}
		return strings.TrimSuffix(up, "/")
	}
	if dir != "." && (root == dir || strings.HasPrefix(root, dir+"/")) {
		return strings.TrimPrefix(strings.TrimPrefix(root, dir), "/")
	}
	return up + root
}

func refs(cs []Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Ref
	}
	return out
}

func whys(cs []Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Why
	}
	return out
}

// pyStr is s as a Python string literal (JSON's escapes are Python's).
func pyStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pyList prints items as a Python list: on one line when there is no
// comment, else one item a line with its comment where the line fits in
// width columns.
func pyList(items, comments []string, width int) string {
	if len(items) == 0 {
		return "[]"
	}
	if comments == nil {
		quoted := make([]string, len(items))
		for i, it := range items {
			quoted[i] = pyStr(it)
		}
		return "[" + strings.Join(quoted, ", ") + "]"
	}
	var b strings.Builder
	b.WriteString("[\n")
	for i, it := range items {
		line := "    " + pyStr(it) + ","
		if c := comments[i]; c != "" && len(line)+len("  # ")+len(c) <= width {
			line += "  # " + c
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("]")
	return b.String()
}

// indent indents every line of s but the first by prefix.
func indent(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}
