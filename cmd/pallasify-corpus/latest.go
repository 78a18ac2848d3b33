package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// latestPart is one part's file under -latest-dir.
type latestPart struct {
	Name  string // file name
	Title string // its heading
	Fence bool   // the part prints plain-text tables: fence them
}

var (
	latestKernels = latestPart{"corpus-latest.md", "kernel stages", false}
	latestHost    = latestPart{"corpus-tpuhost-latest.md", "TPU-host run", false}
	latestAudit   = latestPart{"corpus-audit-latest.md", "maintainer audit", true}
)

// tee prints what write prints to o.Out and, when o.Latest is set, writes it
// to the part's file there (replacing the file whole), under a heading and a
// line naming the run.
func tee(o Options, agg *Aggregate, part latestPart, write func(io.Writer)) error {
	var printed bytes.Buffer
	write(&printed)
	if _, err := o.Out.Write(printed.Bytes()); err != nil {
		return err
	}
	if o.Latest == "" {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# pallasify-corpus: latest %s\n\n", part.Title)
	fmt.Fprintf(&b, "Written by `cmd/pallasify-corpus` (`make corpus`) on %s", agg.Date)
	if head := gitHead(); head != "" {
		fmt.Fprintf(&b, ", commit %s", head)
	}
	fmt.Fprintf(&b, ", binary %s, corpus %s; the next run of this part replaces this file.\n\n", agg.Binary, agg.Corpus)
	text := strings.TrimLeft(printed.String(), "\n")
	if part.Fence {
		text = "```text\n" + strings.TrimRight(text, "\n") + "\n```\n"
	}
	b.WriteString(text)
	path := filepath.Join(o.Latest, part.Name)
	if err := os.MkdirAll(o.Latest, 0o755); err != nil {
		return fmt.Errorf("-latest-dir: %w", err)
	}
	if err := os.WriteFile(path+".tmp", []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("-latest-dir: %w", err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("-latest-dir: %w", err)
	}
	fmt.Fprintf(o.Err, "corpus: %s tables written to %s\n", part.Title, path)
	return nil
}

// gitHead is the checkout's short commit, or "" outside a git work tree.
func gitHead() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
