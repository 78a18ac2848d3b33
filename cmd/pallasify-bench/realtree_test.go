package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCheckCoverage: the real-tree case refuses to time a pallasify that
// walked fewer files than the tree's Python files (exit status 1, findings,
// is accepted as analyze returns it).
func TestCheckCoverage(t *testing.T) {
	fake := func(files, code int) string {
		p := filepath.Join(t.TempDir(), "pallasify")
		script := "#!/bin/sh\necho '{\"files\": " + itoa(files) + "}'\nexit " + itoa(code) + "\n"
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()
	if err := checkCoverage(ctx, fake(3965, 1), "tree", 3965); err != nil {
		t.Errorf("full walk: %v", err)
	}
	err := checkCoverage(ctx, fake(0, 0), "tree", 3965)
	if err == nil || !strings.Contains(err.Error(), "walked 0 files") {
		t.Errorf("empty walk: err = %v; want walked 0 files", err)
	}
	if err := checkCoverage(ctx, fake(1, 2), "tree", 1); err == nil {
		t.Error("exit status 2 accepted")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
