package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// Line limits of the Markdown documentation, in characters (runes): prose and
// code blocks wrap at docsProse; a table row, which cannot wrap, may run to
// docsTable.
const (
	docsProse = 120
	docsTable = 250
)

// docsDirs are the folders whose Markdown files TestDocsLineLength reads,
// besides the root README.md.
var docsDirs = []string{"cmd", "pipeline", "transforms", "validators", "prompts", "fixtures"}

// longLines returns "LINE: N characters (limit L)" for every line of text
// over its limit: a table row (a line starting with '|') over docsTable,
// any other line over docsProse.
func longLines(text string) []string {
	var bad []string
	for i, line := range strings.Split(text, "\n") {
		n := utf8.RuneCountInString(strings.TrimRight(line, "\r"))
		limit := docsProse
		if strings.HasPrefix(strings.TrimSpace(line), "|") {
			limit = docsTable
		}
		if n > limit {
			bad = append(bad, fmt.Sprintf("%d: %d characters (limit %d)", i+1, n, limit))
		}
	}
	return bad
}

// docFiles lists the root README.md and every .md file under docsDirs,
// skipping testdata folders and virtual environments.
func docFiles(t *testing.T, repo string) []string {
	t.Helper()
	files := []string{filepath.Join(repo, "README.md")}
	for _, dir := range docsDirs {
		err := filepath.WalkDir(filepath.Join(repo, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				switch d.Name() {
				case "testdata", ".venv", "node_modules", "__pycache__":
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(d.Name(), ".md") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// TestDocsLineLength: the README files and the other Markdown documentation
// wrap prose at 120 characters and keep table rows under 250.
func TestDocsLineLength(t *testing.T) {
	repo := filepath.Join("..", "..")
	files := docFiles(t, repo)
	if len(files) < 20 {
		t.Fatalf("found %d Markdown files; expected the package READMEs", len(files))
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, path)
		for _, msg := range longLines(string(b)) {
			t.Errorf("%s:%s", filepath.ToSlash(rel), msg)
		}
	}
}

// TestDocsLineLengthCatches: the check flags a long prose line and a long
// table row, and passes lines at the limits.
func TestDocsLineLengthCatches(t *testing.T) {
	ok := strings.Repeat("é", docsProse) + "\n| " + strings.Repeat("x", docsTable-4) + " |\n"
	if bad := longLines(ok); len(bad) != 0 {
		t.Errorf("lines at the limits flagged: %v", bad)
	}
	long := "# title\n" + strings.Repeat("a", docsProse+1) + "\n  | " + strings.Repeat("x", docsTable) + " |\n"
	bad := longLines(long)
	if len(bad) != 2 || !strings.HasPrefix(bad[0], "2: 121 characters (limit 120)") ||
		!strings.HasPrefix(bad[1], fmt.Sprintf("3: %d characters (limit %d)", docsTable+6, docsTable)) {
		t.Errorf("long lines not flagged as expected: %v", bad)
	}
}
