package pipeline

import (
	"fmt"
	"sort"
	"testing"
)

// SecondPassNews returns what a second migrate over a migrated tree
// reports that the first did not: a diagnostic (path, code, message; lines
// move when the first pass rewrote the file) absent from the first run, or
// a file the second pass would change. An idempotent run returns nothing.
// The fixture harnesses (TestFixtures, TestE2EFixtures) call it.
func SecondPassNews(first, second *Run) []string {
	seen := map[string]bool{}
	for _, f := range first.Files {
		for _, d := range f.Diagnostics {
			seen[diagKey(f.Path, d)] = true
		}
	}
	var news []string
	for _, f := range second.Files {
		if f.Changed() {
			news = append(news, fmt.Sprintf("%s: changed by the second pass:\n%s", f.Path, FileDiff(f)))
		}
		for _, d := range f.Diagnostics {
			if !seen[diagKey(f.Path, d)] {
				news = append(news, fmt.Sprintf("%s:%d: new on the second pass: %s %s", f.Path, d.Line, d.Code, d.Message))
			}
		}
	}
	sort.Strings(news)
	return news
}

func diagKey(path string, d Diagnostic) string {
	return path + "\x00" + d.Code + "\x00" + d.Message
}

func TestSecondPassNews(t *testing.T) {
	d := Diagnostic{Code: "PDV001", Line: 3, Message: "m"}
	first := &Run{Files: []*File{{Path: "a.py", Diagnostics: []Diagnostic{d}}}}
	moved := d
	moved.Line = 7
	same := &Run{Files: []*File{{Path: "a.py", Diagnostics: []Diagnostic{moved}}}}
	if n := SecondPassNews(first, same); len(n) != 0 {
		t.Errorf("a diagnostic that only moved counted as new: %v", n)
	}
	other := &Run{Files: []*File{{Path: "a.py", Diagnostics: []Diagnostic{d, {Code: "PDR009", Message: "proven but not wired"}}},
		{Path: "b.py", Original: []byte("x\n"), Updated: []byte("y\n")}}}
	if n := SecondPassNews(first, other); len(n) != 2 {
		t.Errorf("news = %v; want the new diagnostic and the changed file", n)
	}
}
