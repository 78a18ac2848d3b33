package main

import (
	"context"
	"strings"
	"testing"
)

// TestFormatHTML: analyze and migrate take --format html and write one
// page to standard output, with the run's options in its summary; migrate's
// dry run puts the diff in the page (hunks with added and removed lines),
// not as text before it.
func TestFormatHTML(t *testing.T) {
	root := writeProject(t)
	o, out := newMigrate(t, root)
	o.Format, o.Select = "html", []string{"PTT"}
	if code := exitCode(migrateRun(context.Background(), o)); code != 0 {
		t.Fatalf("migrate --format html: exit %d", code)
	}
	s := out.String()
	if !strings.HasPrefix(s, "<!DOCTYPE html>") || !strings.HasSuffix(s, "</html>\n") {
		t.Errorf("migrate --format html is not one page:\n%.300s", s)
	}
	for _, want := range []string{"<tr><th>Options</th><td>select PTT", `<tr class="add">`, `<tr class="del">`, `<section id="kernels">`} {
		if !strings.Contains(s, want) {
			t.Errorf("migrate page lacks %s", want)
		}
	}
	io, aout, _ := testStreams()
	a := &analyzeOptions{IO: io, treeFlags: treeFlags{Path: root, Target: "portable", Format: "html", Rules: testRules, Exclude: []string{"*.txt"}}, NoEmulator: true}
	if err := analyzeRun(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!DOCTYPE html>", "pallasify analyze report", "<tr><th>Options</th><td>exclude *.txt", "analyze keeps no file contents"} {
		if !strings.Contains(aout.String(), want) {
			t.Errorf("analyze page lacks %s", want)
		}
	}
}
