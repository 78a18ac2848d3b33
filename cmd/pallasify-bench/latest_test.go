package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWriteLatest: the printed tables land in the -latest file, fenced, with
// the run's date and arguments, and a second run replaces them.
func TestWriteLatest(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".bench", latestName(false, false))
	when := time.Date(2026, 12, 7, 20, 16, 0, 0, time.UTC)
	printed := "case\twall\ngrep -rc cuda (floor)  90ms\n"
	if err := writeLatest(path, when, []string{"-runs", "5"}, []byte(printed)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"# pallasify-bench: latest run\n", "`go run ./cmd/pallasify-bench -runs 5` on 2026-12-07 20:16 UTC",
		"```text\n" + printed + "```\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %q:\n%s", path, want, got)
		}
	}
	if err := writeLatest(path, when, nil, []byte("second run")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "grep -rc") || !strings.Contains(string(b), "second run\n```\n") {
		t.Errorf("the second run did not replace the file:\n%s", b)
	}
	if latestName(true, false) == latestName(false, false) || latestName(false, true) == latestName(false, false) {
		t.Error("-drafts and -real-only runs would overwrite the full run's tables")
	}
}
