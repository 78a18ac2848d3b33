package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/pallasify/pallasify/transforms/hazards"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Notebooks (.ipynb) are rewritten cell by cell with the same rules as .py
// files. Only the "source" value of a changed code cell is replaced in the
// file's bytes; everything else — outputs, metadata, key order, indentation,
// the trailing newline — stays byte for byte, and the new source is written
// in the notebook's own style (one JSON string per line, the array's own
// indentation, ensure_ascii as the file uses it; lines the rewrite did not
// touch keep their original JSON text). IPython magics and shell lines
// (%, !, x = !cmd, obj?) stand in as `pass` while the rules run and come
// back as they were; a cell magic (%%) cell is left alone.

// nbCell is one code cell's source as it lies in the file.
type nbCell struct {
	index      int // the cell's position among all cells (0-based)
	start, end int // the source value's byte span
	array      bool
	raw        []string // each element's JSON text (array form)
	lines      []string // each element decoded (array form), or the one string
	layout     nbLayout
}

// nbLayout is the whitespace of a source array: after '[', between
// elements (after the comma) and before ']'.
type nbLayout struct{ open, sep, close string }

// text is the cell's Python source.
func (c *nbCell) text() string { return strings.Join(c.lines, "") }

var errNotNotebook = errors.New("not notebook JSON")

// parseNotebook finds the code cells' source spans in src.
func parseNotebook(src []byte) ([]*nbCell, error) {
	if !json.Valid(src) {
		return nil, errNotNotebook
	}
	s := &jscan{b: src}
	s.ws()
	var cells []*nbCell
	err := s.object(func(key string) error {
		if key != "cells" {
			return s.skip()
		}
		n := 0
		return s.array(func() error {
			c, err := s.cell(n)
			n++
			if err != nil {
				return err
			}
			if c != nil {
				cells = append(cells, c)
			}
			return nil
		})
	})
	return cells, err
}

// jscan walks valid JSON, keeping byte offsets.
type jscan struct {
	b []byte
	i int
}

func (s *jscan) ws() string {
	j := s.i
	for s.i < len(s.b) && strings.IndexByte(" \t\r\n", s.b[s.i]) >= 0 {
		s.i++
	}
	return string(s.b[j:s.i])
}

func (s *jscan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// str consumes a string and returns its JSON text and value.
func (s *jscan) str() (raw, val string, err error) {
	if s.peek() != '"' {
		return "", "", errNotNotebook
	}
	j := s.i
	s.i++
	for s.i < len(s.b) && s.b[s.i] != '"' {
		if s.b[s.i] == '\\' {
			s.i++
		}
		s.i++
	}
	s.i++
	raw = string(s.b[j:s.i])
	err = json.Unmarshal([]byte(raw), &val)
	return raw, val, err
}

// skip consumes one value of any kind.
func (s *jscan) skip() error {
	switch s.peek() {
	case '"':
		_, _, err := s.str()
		return err
	case '{':
		return s.object(func(string) error { return s.skip() })
	case '[':
		return s.array(s.skip)
	}
	for s.i < len(s.b) && strings.IndexByte(",]} \t\r\n", s.b[s.i]) < 0 {
		s.i++
	}
	return nil
}

func (s *jscan) object(member func(key string) error) error {
	if s.peek() != '{' {
		return errNotNotebook
	}
	s.i++
	for {
		s.ws()
		if s.peek() == '}' {
			s.i++
			return nil
		}
		_, key, err := s.str()
		if err != nil {
			return err
		}
		s.ws()
		s.i++ // ':'
		s.ws()
		if err := member(key); err != nil {
			return err
		}
		s.ws()
		if s.peek() == ',' {
			s.i++
		}
	}
}

func (s *jscan) array(elem func() error) error {
	if s.peek() != '[' {
		return errNotNotebook
	}
	s.i++
	for {
		s.ws()
		if s.peek() == ']' {
			s.i++
			return nil
		}
		if err := elem(); err != nil {
			return err
		}
		s.ws()
		if s.peek() == ',' {
			s.i++
		}
	}
}

// cell reads one cell object; nil when it is not a code cell.
func (s *jscan) cell(n int) (*nbCell, error) {
	kind := ""
	var c *nbCell
	err := s.object(func(key string) error {
		switch key {
		case "cell_type":
			_, v, err := s.str()
			kind = v
			return err
		case "source":
			var err error
			c, err = s.source(n)
			return err
		}
		return s.skip()
	})
	if err != nil || kind != "code" || c == nil {
		return nil, err
	}
	return c, nil
}

// source reads a cell's source value: one string or an array of strings.
func (s *jscan) source(n int) (*nbCell, error) {
	c := &nbCell{index: n, start: s.i}
	if s.peek() == '"' {
		_, v, err := s.str()
		c.lines, c.end = []string{v}, s.i
		return c, err
	}
	if s.peek() != '[' {
		return nil, errNotNotebook
	}
	c.array = true
	s.i++
	for k := 0; ; k++ {
		w := s.ws()
		switch {
		case k == 0:
			c.layout.open = w
		case k == 1:
			c.layout.sep = w
		}
		if s.peek() == ']' {
			if k > 0 {
				c.layout.close = w
			}
			s.i++
			break
		}
		raw, v, err := s.str()
		if err != nil {
			return nil, err
		}
		c.raw, c.lines = append(c.raw, raw), append(c.lines, v)
		c.layout.close = s.ws()
		if s.peek() == ',' {
			s.i++
			continue
		}
		s.i++ // ']'
		break
	}
	if len(c.raw) == 1 {
		c.layout.sep = c.layout.open
	}
	c.end = s.i
	return c, nil
}

// asciiOnly reports whether the notebook escapes non-ASCII text
// (json.dump's ensure_ascii=True): no raw non-ASCII byte and at least one
// \u escape of a non-ASCII character. nbformat's own default is raw UTF-8.
func asciiOnly(src []byte) bool {
	for _, c := range src {
		if c >= 0x80 {
			return false
		}
	}
	return nonASCIIEscape.Match(src)
}

var nonASCIIEscape = regexp.MustCompile(`\\u(00[89a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}|[1-9a-fA-F][0-9a-fA-F]{3})`)

// pyJSONString encodes s as Python's json.dumps does (no HTML escaping;
// lowercase \u escapes; with ascii, every non-ASCII character escaped, as
// surrogate pairs above the BMP).
func pyJSONString(s string, ascii bool) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r >= 0x80 && ascii:
			if r > 0xffff {
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// splitKeepEnds splits text after each "\n" (Python's splitlines(True) for
// "\n" endings, as nbformat stores lines).
func splitKeepEnds(text string) []string {
	var out []string
	for text != "" {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = text[i+1:]
	}
	return out
}

// encode writes text as the cell's new source value, in the cell's style.
func (c *nbCell) encode(text string, ascii bool) string {
	if !c.array {
		return pyJSONString(text, ascii)
	}
	kept := map[string]string{}
	for i, v := range c.lines {
		if _, ok := kept[v]; !ok {
			kept[v] = c.raw[i]
		}
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, line := range splitKeepEnds(text) {
		if i == 0 {
			b.WriteString(c.layout.open)
		} else {
			b.WriteString(",")
			b.WriteString(c.layout.sep)
		}
		if raw, ok := kept[line]; ok {
			b.WriteString(raw)
		} else {
			b.WriteString(pyJSONString(line, ascii))
		}
	}
	b.WriteString(c.layout.close)
	b.WriteByte(']')
	return b.String()
}

// magicLine matches an IPython line the Python parser does not take: a line
// magic (%), a shell escape (!), an assignment from either (x = !ls), or a
// help request (obj?, ?obj).
var magicLine = regexp.MustCompile(`^\s*(?:[%!?]|[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[%!]|[A-Za-z_][\w.]*\?{1,2}\s*$)`)

const magicStandIn = "pass  # pallasify-magic-"

// maskMagics replaces every magic line (and its backslash continuations)
// with an indented `pass` stand-in; the originals come back by unmask.
// ok is false for a cell magic (%%) cell, which is not Python.
func maskMagics(text string) (masked string, saved []string, ok bool) {
	lines := splitKeepEnds(text)
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" {
			if strings.HasPrefix(t, "%%") {
				return "", nil, false
			}
			break
		}
	}
	var b strings.Builder
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !magicLine.MatchString(l) {
			b.WriteString(l)
			continue
		}
		orig := l
		for strings.HasSuffix(strings.TrimRight(lines[i], "\r\n"), `\`) && i+1 < len(lines) {
			i++
			orig += lines[i]
		}
		body := strings.TrimRight(orig, "\r\n")
		end := orig[len(body):]
		indent := body[:len(body)-len(strings.TrimLeft(body, " \t"))]
		fmt.Fprintf(&b, "%s%s%d%s", indent, magicStandIn, len(saved), end)
		saved = append(saved, strings.TrimLeft(body, " \t"))
	}
	return b.String(), saved, true
}

// unmask puts the saved magic lines back at their stand-ins (keeping the
// stand-in's indentation, should a rewrite have moved it); false when a
// stand-in is missing, repeated or changed.
func unmask(text string, saved []string) (string, bool) {
	if len(saved) == 0 {
		return text, true
	}
	found := make([]bool, len(saved))
	lines := splitKeepEnds(text)
	for i, l := range lines {
		body := strings.TrimRight(l, "\r\n")
		t := strings.TrimLeft(body, " \t")
		rest, ok := strings.CutPrefix(t, magicStandIn)
		if !ok {
			continue
		}
		var k int
		if _, err := fmt.Sscanf(rest, "%d", &k); err != nil || fmt.Sprint(k) != rest || k >= len(saved) || found[k] {
			return "", false
		}
		found[k] = true
		lines[i] = body[:len(body)-len(t)] + saved[k] + l[len(body):]
	}
	for _, f := range found {
		if !f {
			return "", false
		}
	}
	return strings.Join(lines, ""), true
}

// lineAt is the 1-based line of byte offset off in src.
func lineAt(src []byte, off int) int { return bytes.Count(src[:off], []byte{'\n'}) + 1 }

// nbWork is one code cell during a run: its current source with magics
// masked, and whether it takes part (it parses; not a cell magic).
type nbWork struct {
	cell   *nbCell
	text   string
	saved  []string
	noEOL  bool // the cell's last line has no newline
	usable bool
}

const cellBoundary = "# pallasify-cell-boundary-"

// processNotebook rewrites a notebook's code cells; it fills f's
// diagnostics and returns the new file when a cell changed.
//
// A notebook runs its cells top to bottom as one module, so cell k is
// rewritten with the cells before it (as already rewritten) in front of it:
// the rules see their imports and definitions (no second `import torch` or
// DEVICE line per cell), and a definition a fix needs lands after the last
// import of cells 1..k — never in a later cell than its first use. Only cell
// k's findings are reported at that step; cells the parser rejects stay out
// of the context and untouched.
func (st *state) processNotebook(ctx context.Context, parsers *ts.Pool, pf *prefilter, f *File, src []byte) []byte {
	cells, err := parseNotebook(src)
	if err != nil {
		if hook := notebookHook(st.opts.Rules); hook != nil {
			f.Diagnostics = append(f.Diagnostics, hook(f.Path, src)...)
		}
		return nil
	}
	works := make([]*nbWork, len(cells))
	for i, c := range cells {
		text := c.text()
		masked, saved, ok := maskMagics(text)
		if !ok {
			masked = text // a cell magic cell: left as it is
		}
		works[i] = &nbWork{cell: c, text: masked, saved: saved, usable: ok && text != "",
			noEOL: text != "" && !strings.HasSuffix(text, "\n")}
	}
	for k, w := range works {
		if ctx.Err() != nil {
			return nil // cancelled or over the file's time: untouched
		}
		if w.usable {
			st.rewriteCell(ctx, parsers, pf, f, src, works[:k+1])
		}
	}
	ascii := asciiOnly(src)
	var out bytes.Buffer
	last := 0
	for _, w := range works {
		orig := w.cell.text()
		text, ok := unmask(w.text, w.saved)
		if !ok {
			f.Diagnostics = append(f.Diagnostics, Diagnostic{Code: CodeNotebookCell, Severity: SevWarning, Path: f.Path,
				Line: w.cell.fileLine(src, 1), Message: fmt.Sprintf("cell %d: the rewrite moved or dropped an IPython magic line; cell left untouched", w.cell.index+1)})
			continue
		}
		if text == orig {
			continue
		}
		out.Write(src[last:w.cell.start])
		out.WriteString(w.cell.encode(text, ascii))
		last = w.cell.end
	}
	if last == 0 {
		return nil
	}
	out.Write(src[last:])
	return out.Bytes()
}

// rewriteCell runs the rules over the last cell of works with the usable
// cells before it as context and takes back every usable cell's new text.
// Findings land on the file with their cell's number in the message and the
// file line of the JSON string holding the cell line.
func (st *state) rewriteCell(ctx context.Context, parsers *ts.Pool, pf *prefilter, f *File, src []byte, works []*nbWork) {
	cur := works[len(works)-1]
	var joint strings.Builder
	var parts []*nbWork
	var starts []int // each part's first line in the joint source
	startLine := 1
	for _, w := range works {
		if !w.usable {
			continue
		}
		if len(parts) > 0 {
			fmt.Fprintf(&joint, "%s%d\n", cellBoundary, len(parts))
		}
		starts = append(starts, strings.Count(joint.String(), "\n")+1)
		if w == cur {
			startLine = starts[len(starts)-1]
		}
		joint.WriteString(w.text)
		if w.noEOL {
			joint.WriteString("\n")
		}
		parts = append(parts, w)
	}
	text := []byte(joint.String())
	rules := cellRules(pf.selectRules(text))
	if len(rules) == 0 {
		return
	}
	eng := &rule.Engine{Rules: rules, Opts: rule.Options{Target: st.opts.Target, UnsafeFixes: st.opts.UnsafeFixes, Mark: st.opts.Mark,
		Limits: st.opts.Limits, LineLength: st.lineLength}}
	parser := parsers.Get()
	res, err := eng.Run(ctx, parser, f.Path, text)
	parsers.Put(parser)
	// A finding in an earlier cell was reported with that cell, unless it is
	// a fix applied only now (the later cell gave it its context).
	where := func(d Diagnostic) (Diagnostic, bool) {
		part := len(parts) - 1
		for d.Line != 0 && part > 0 && d.Line < starts[part] {
			part--
		}
		if parts[part] != cur && !d.Applied {
			return d, false
		}
		c := parts[part].cell
		d.Message = fmt.Sprintf("cell %d: %s", c.index+1, d.Message)
		d.Line = c.fileLine(src, d.Line-starts[part]+1)
		return d, true
	}
	add := func(d Diagnostic) {
		if d, ok := where(d); ok {
			f.Diagnostics = append(f.Diagnostics, d)
		}
	}
	if err != nil {
		add(Diagnostic{Code: CodeInternal, Severity: SevError, Path: f.Path, Message: "engine could not run: " + err.Error()})
		cur.usable = false
		return
	}
	for _, fd := range res.Findings {
		add(findingDiag(f.Path, fd))
	}
	for _, pr := range res.Problems {
		add(Diagnostic{Code: pr.Code, Rule: pr.Rule, Severity: SevError, Path: f.Path, Line: pr.Line, Col: pr.Col, Message: pr.Message})
		if pr.Code == CodeSyntaxError || pr.Code == CodeRefused || pr.Code == CodeOverBudget {
			cur.usable = false // out of the context of later cells; untouched
		}
	}
	if !cur.usable || !res.Changed() {
		return
	}
	segs, ok := splitCells(string(res.Output), len(parts))
	if !ok {
		add(Diagnostic{Code: CodeNotebookCell, Severity: SevWarning, Path: f.Path, Line: startLine,
			Message: "the rewrite crossed a cell boundary; cell left untouched"})
		return
	}
	for i, w := range parts {
		seg := segs[i]
		if w.noEOL {
			seg = strings.TrimSuffix(seg, "\n")
		}
		w.text = seg
	}
}

// cellRules drops the file-level notebook rule (PDX011), which reads a
// whole .ipynb and would take a cell for broken notebook JSON.
func cellRules(rules []*rule.Rule) []*rule.Rule {
	var out []*rule.Rule
	for _, r := range rules {
		if r.Code != hazards.JupyterNotebook.Code {
			out = append(out, r)
		}
	}
	return out
}

// splitCells cuts a joint source at its n-1 boundary lines, which must come
// in order.
func splitCells(text string, n int) ([]string, bool) {
	var segs []string
	var b strings.Builder
	next := 1
	for _, l := range splitKeepEnds(text) {
		if rest, ok := strings.CutPrefix(strings.TrimRight(l, "\n"), cellBoundary); ok {
			if rest != fmt.Sprint(next) {
				return nil, false
			}
			next++
			segs = append(segs, b.String())
			b.Reset()
			continue
		}
		b.WriteString(l)
	}
	segs = append(segs, b.String())
	return segs, len(segs) == n
}

// fileLine maps a 1-based line of the cell's source to the file line of the
// JSON string holding it.
func (c *nbCell) fileLine(src []byte, line int) int {
	if !c.array || len(c.raw) == 0 {
		return lineAt(src, c.start)
	}
	if line < 1 {
		line = 1
	}
	if line > len(c.raw) {
		line = len(c.raw)
	}
	return lineAt(src, c.elemOffset(src, line-1))
}

// elemOffset is the byte offset of the k-th element of the source array.
func (c *nbCell) elemOffset(src []byte, k int) int {
	s := &jscan{b: src, i: c.start + 1}
	for n := 0; ; n++ {
		s.ws()
		if n == k || s.peek() == ']' {
			return s.i
		}
		s.str()
		s.ws()
		s.i++ // ','
	}
}
