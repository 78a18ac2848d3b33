package files

import (
	"bytes"
	"context"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
)

// Family is the family name shown in rule listings.
const Family = "files"

// Kind is what a file is to this package.
type Kind string

// The kinds of files the rules read.
const (
	Requirements Kind = "requirements" // requirements*.txt, constraints*.txt, requirements/*.txt (and .in)
	Pyproject    Kind = "pyproject"    // pyproject.toml
	SetupCfg     Kind = "setup-cfg"    // setup.cfg
	SetupPy      Kind = "setup-py"     // setup.py: read only (the rule engine rewrites it as Python)
	YAML         Kind = "yaml"         // *.yml, *.yaml: a config, or a conda environment
	JSON         Kind = "json"         // *.json
	TOML         Kind = "toml"         // *.toml other than pyproject.toml
	Dockerfile   Kind = "dockerfile"   // Dockerfile, Dockerfile.*, *.dockerfile, Containerfile
	Shell        Kind = "shell"        // *.sh, *.bash
	CI           Kind = "ci"           // .github/workflows/*.yml, .lightning/workflows/*.yaml, .gitlab-ci.yml
	// Conda is a YAML file whose top level has `dependencies:` (a conda
	// environment): KindOf says YAML, Check tells it apart by its text.
	Conda Kind = "conda"
)

// KindOf returns the kind of the file at rel (slash-separated, relative to
// the root), or "" for a file this package does not read.
func KindOf(rel string) Kind {
	base := path.Base(rel)
	lower := strings.ToLower(base)
	ext := path.Ext(lower)
	dir := path.Dir(rel)
	switch {
	case lower == "setup.py":
		return SetupPy
	case lower == "pyproject.toml":
		return Pyproject
	case lower == "setup.cfg":
		return SetupCfg
	case lower == "dockerfile" || strings.HasPrefix(lower, "dockerfile.") || ext == ".dockerfile" || lower == "containerfile":
		return Dockerfile
	case ext == ".txt" || ext == ".in":
		if strings.HasPrefix(lower, "requirements") || strings.HasPrefix(lower, "constraints") || path.Base(dir) == "requirements" {
			return Requirements
		}
		return ""
	case ext == ".sh" || ext == ".bash":
		return Shell
	case ext == ".yml" || ext == ".yaml":
		if lower == ".gitlab-ci.yml" || strings.HasSuffix(dir, ".github/workflows") || strings.HasSuffix(dir, ".lightning/workflows") ||
			dir == ".github/workflows" || dir == ".lightning/workflows" {
			return CI
		}
		return YAML
	case ext == ".json":
		return JSON
	case ext == ".toml":
		return TOML
	}
	return ""
}

// Example is a rule's before/after documentation, also run as a test: the
// file Path holding Before, and what each target makes of it.
type Example struct {
	Path     string
	Before   string
	Portable Output
	TPU      Output
}

// Output is what a target makes of an example: the text of the file at
// Path (the input's own path: edited in place; another: a new file). The
// zero value is "unchanged".
type Output struct {
	Path string
	Text string
}

// Rule is one rule for non-Python files.
type Rule struct {
	Code   string // PNF plus three digits; stable forever
	Name   string // kebab-case, stable
	Safety rule.Safety
	Kinds  []Kind // the kinds of file it reads
	// Needles are lower-case strings one of which occurs (in the lower-cased
	// text) in every file the rule can report on; a file holding none of the
	// running rules' needles is neither parsed nor read further.
	Needles []string
	Doc     string // Markdown: title line, "## What it does", "## Why", "## Example", "## Fix safety"
	Example Example
	Run     func(p *Pass)
}

// Title is the first line of Doc.
func (r *Rule) Title() string {
	t, _, _ := strings.Cut(strings.TrimSpace(r.Doc), "\n")
	return strings.TrimSpace(t)
}

func (r *Rule) reads(k Kind) bool {
	for _, x := range r.Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// Fix is one change a finding offers: edits of the file, applied together
// or not at all. Beside marks a requirement set's fix: on --target portable
// its edits make a new file beside the original (TPUSetPath) instead of
// changing it.
type Fix struct {
	Title  string
	Edits  []rule.Edit
	Beside bool
}

// Line is one line of the file: Text without its line ending, Start its
// offset, End the offset of its line ending (or of the file's end).
type Line struct {
	Start, End int
	Text       string
}

// Pass is everything a rule sees of one file.
type Pass struct {
	Path   string
	Kind   Kind
	Src    []byte
	Lines  []Line
	Target rule.Target
	EOL    string // the file's line ending: "\n" or "\r\n"
	rule   *Rule
	out    *[]finding
}

type finding struct {
	rule.Finding
	fix *Fix
}

// Report records a finding at the 1-based line n and byte column col
// (1-based, in the line's text) with an optional fix.
func (p *Pass) Report(n, col int, msg string, fix *Fix) {
	l := p.Lines[n-1]
	f := rule.Finding{Code: p.rule.Code, Rule: p.rule.Name, Start: l.Start + col - 1, End: l.End, Line: n, Col: col, Message: msg}
	if fix != nil {
		f.Fix = &rule.Fix{Title: fix.Title, Safety: p.rule.Safety, Edits: fix.Edits}
	}
	*p.out = append(*p.out, finding{Finding: f, fix: fix})
}

// CommentOut returns the edit that turns line n into a comment, with the
// reason on a comment line of its own above it (both in the file's line
// ending): `# pallasify: CODE reason` then `# <the line>`.
func (p *Pass) CommentOut(n int, reason string) rule.Edit {
	l := p.Lines[n-1]
	return rule.Edit{Start: l.Start, End: l.Start, New: "# pallasify: " + p.rule.Code + " " + reason + p.EOL + "# "}
}

// InsertAfter returns the edit that adds text as whole lines after line n.
func (p *Pass) InsertAfter(n int, lines ...string) rule.Edit {
	l := p.Lines[n-1]
	body := strings.Join(lines, p.EOL) + p.EOL
	if l.End == len(p.Src) { // the last line, with no line ending
		return rule.Edit{Start: l.End, End: l.End, New: p.EOL + strings.TrimSuffix(body, p.EOL)}
	}
	at := l.End + len(p.EOL)
	if p.Src[l.End] == '\n' { // a lone \n in a CRLF file
		at = l.End + 1
	}
	return rule.Edit{Start: at, End: at, New: body}
}

// Options configure Check.
type Options struct {
	Target      rule.Target
	UnsafeFixes bool
	// Exists reports whether the tree already holds a file at rel; a fix
	// that would create it is then skipped. Nil: nothing exists.
	Exists func(rel string) bool
}

// NewFile is a file a run creates.
type NewFile struct {
	Path    string
	Content []byte
}

// Problem is a file the rules could not read (PIO001: it does not parse
// as its kind).
type Problem struct {
	Code    string
	Line    int
	Message string
}

// Result is what Check made of one file.
type Result struct {
	Findings []rule.Finding
	Output   []byte   // the file after the in-place fixes; nil when unchanged
	New      *NewFile // the requirement set's TPU set on --target portable
	Problem  *Problem
}

// SplitLines splits src into lines (a final line without a line ending
// included; none after a final line ending).
func SplitLines(src []byte) []Line {
	var out []Line
	for start := 0; start < len(src); {
		end := bytes.IndexByte(src[start:], '\n')
		next := start + end + 1
		if end < 0 {
			end, next = len(src)-start, len(src)
		}
		e := start + end
		if e > start && src[e-1] == '\r' && e < len(src) {
			e--
		}
		out = append(out, Line{Start: start, End: e, Text: string(src[start:e])})
		start = next
	}
	return out
}

// Check runs rules (those that read the file's kind) over src, the file at
// path, and applies the fixes the options allow.
func Check(ctx context.Context, rules []*Rule, opts Options, path string, src []byte) Result {
	kind := KindOf(path)
	var res Result
	if kind == "" || ctx.Err() != nil {
		return res
	}
	if kind == YAML && condaEnv(src) {
		kind = Conda
	}
	lower := bytes.ToLower(src)
	var run []*Rule
	for _, r := range rules {
		if r.reads(kind) && hasNeedle(lower, r.Needles) {
			run = append(run, r)
		}
	}
	if len(run) == 0 {
		return res
	}
	if pr := wellFormed(kind, src); pr != nil {
		res.Problem = pr
		return res
	}
	eol := "\n"
	if i := bytes.IndexByte(src, '\n'); i > 0 && src[i-1] == '\r' {
		eol = "\r\n"
	}
	var found []finding
	lines := SplitLines(src)
	for _, r := range run {
		p := &Pass{Path: path, Kind: kind, Src: src, Lines: lines, Target: opts.Target, EOL: eol, rule: r, out: &found}
		r.Run(p)
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].Start < found[j].Start })
	res.Output, res.New = apply(found, opts, path, src)
	for _, f := range found {
		res.Findings = append(res.Findings, f.Finding)
	}
	return res
}

var condaDeps = regexp.MustCompile(`(?m)^dependencies:\s*$`)

func condaEnv(src []byte) bool { return condaDeps.Match(src) }

func hasNeedle(lower []byte, needles []string) bool {
	if len(needles) == 0 {
		return true
	}
	for _, n := range needles {
		if bytes.Contains(lower, []byte(n)) {
			return true
		}
	}
	return false
}

// apply applies the fixes the options allow, in order, skipping one whose
// edits overlap an applied fix's. In-place edits make the output; a Beside
// fix on --target portable goes to the TPU set beside the file (the
// original's text with those edits), unless that file exists.
func apply(found []finding, opts Options, path string, src []byte) ([]byte, *NewFile) {
	besidePath := TPUSetPath(path)
	besideOK := opts.Exists == nil || !opts.Exists(besidePath)
	var inPlace, beside []rule.Edit
	for i := range found {
		f := &found[i]
		if f.fix == nil {
			continue
		}
		if f.Fix.Safety == rule.Unsafe && !opts.UnsafeFixes {
			f.Skipped = "unsafe fix; pass --unsafe-fixes to apply"
			continue
		}
		toBeside := f.fix.Beside && opts.Target == rule.Portable && besidePath != path
		if toBeside && !besideOK {
			f.Skipped = besidePath + " exists: the TPU set is there already"
			continue
		}
		target := &inPlace
		if toBeside {
			target = &beside
		}
		if overlaps(*target, f.fix.Edits) {
			f.Skipped = "overlaps another fix"
			continue
		}
		*target = append(*target, f.fix.Edits...)
		f.Applied = true
	}
	var out []byte
	if len(inPlace) > 0 {
		out = edit(src, inPlace)
	}
	var nf *NewFile
	if len(beside) > 0 {
		nf = &NewFile{Path: besidePath, Content: edit(src, beside)}
	}
	return out, nf
}

// overlaps reports whether an edit of add overlaps one of have. Two
// insertions at one offset do not: edit orders them.
func overlaps(have, add []rule.Edit) bool {
	for _, a := range add {
		for _, h := range have {
			if a.Start < h.End && h.Start < a.End || a.Start == a.End && h.Start < a.Start && a.Start < h.End ||
				h.Start == h.End && a.Start < h.Start && h.Start < a.End {
				return true
			}
		}
	}
	return false
}

// edit applies non-overlapping edits to src.
func edit(src []byte, edits []rule.Edit) []byte {
	sorted := append([]rule.Edit(nil), edits...)
	// At one offset, whole lines (an insertion ending in a line ending) go
	// before a line's new prefix (CommentOut's "# "), so both stay lines.
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Start != sorted[j].Start {
			return sorted[i].Start < sorted[j].Start
		}
		return strings.HasSuffix(sorted[i].New, "\n") && !strings.HasSuffix(sorted[j].New, "\n")
	})
	var b bytes.Buffer
	at := 0
	for _, e := range sorted {
		b.Write(src[at:e.Start])
		b.WriteString(e.New)
		at = e.End
	}
	b.Write(src[at:])
	return b.Bytes()
}

// TPUSetPath is the path of the TPU set made from the requirement set at
// rel on --target portable: "-tpu" before the extension
// (requirements.txt -> requirements-tpu.txt). A file whose name already
// ends in "-tpu" is a TPU set: its own path.
func TPUSetPath(rel string) string {
	ext := path.Ext(rel)
	stem := strings.TrimSuffix(rel, ext)
	if strings.HasSuffix(strings.ToLower(stem), "-tpu") || strings.HasSuffix(strings.ToLower(stem), "_tpu") {
		return rel
	}
	return stem + "-tpu" + ext
}
