package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// latestName is the file under -dir that a run's tables go to: one per kind
// of run, so a partial run leaves the full run's tables alone.
func latestName(drafts, realOnly bool) string {
	switch {
	case drafts:
		return "bench-drafts-latest.md"
	case realOnly:
		return "bench-real-latest.md"
	}
	return "bench-latest.md"
}

// writeLatest writes what the run printed to path as Markdown: a heading,
// the date, commit and arguments of the run, then the printed text as a
// fenced block. It replaces the file whole.
func writeLatest(path string, when time.Time, args []string, printed []byte) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# pallasify-bench: latest run\n\n")
	fmt.Fprintf(&b, "Written by `go run ./cmd/pallasify-bench %s` on %s", strings.Join(args, " "),
		when.UTC().Format("2006-01-02 15:04 MST"))
	if head := gitHead(); head != "" {
		fmt.Fprintf(&b, ", commit %s", head)
	}
	fmt.Fprintf(&b, "; every run replaces this file.\n\n```text\n%s", printed)
	if len(printed) > 0 && printed[len(printed)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString("```\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// gitHead is the checkout's short commit, or "" outside a git work tree.
func gitHead() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
