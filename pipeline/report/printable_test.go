package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pallasify/pallasify/pipeline"
)

// TestReportsEscapeControlBytes reproduces part of issue 32's seventh
// attack: a file named with an escape sequence, a carriage return or bytes
// that are not UTF-8 was printed raw in the text and Markdown reports (a
// terminal runs the escape; a page shows mojibake). Every such byte is now
// escaped; newlines between lines and UTF-8 text stay as they are.
func TestReportsEscapeControlBytes(t *testing.T) {
	name := "evil\x1b[2J\rname\xe9\u0085caf\u00e9.py"
	run := &pipeline.Run{Root: "/src/\x1b]0;title\x07proj", Target: "tpu", Files: []*pipeline.File{
		{Path: name, Lang: pipeline.LangPython, Lines: 3, Mode: 0o644, Original: []byte("a\n"), Updated: []byte("b\n"), Diagnostics: []pipeline.Diagnostic{
			{Code: "PHZ001", Rule: "cuda-event", Severity: pipeline.SevWarning, Path: name, Line: 1, Col: 1, Message: "event \x1b[31m here", Safety: "diagnostic"}}},
	}}
	for _, f := range []Format{Text, Markdown} {
		var b bytes.Buffer
		if err := Write(&b, Build(run, "analyze", rules), f); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, bad := range []string{"\x1b", "\r", "\x07", "\u0085"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s report holds a raw %q", f, bad)
			}
		}
		if !utf8.ValidString(out) {
			t.Errorf("%s report is not valid UTF-8", f)
		}
		wants := []string{`evil\x1b[2J\x0dname\xe9\u0085café.py`}
		if f == Text {
			wants = append(wants, `\x1b]0;title\x07`) // the root: Markdown does not print it
		}
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("%s report lacks %q:\n%s", f, want, out)
			}
		}
	}
}

// TestPrintableSplitRune: a UTF-8 rune split across two writes (bufio's
// buffer boundary) passes whole, not as two escaped bytes.
func TestPrintableSplitRune(t *testing.T) {
	var b bytes.Buffer
	p := &printable{w: &b}
	e := []byte("é")
	p.Write([]byte{'a', e[0]})
	p.Write([]byte{e[1], 'b'})
	p.Write([]byte{0xc3})
	p.Close()
	if got := b.String(); got != `aéb\xc3` {
		t.Errorf("got %q", got)
	}
}
