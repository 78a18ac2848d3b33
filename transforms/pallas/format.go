package pallas

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// RuffLineLength is the line length generated Python is formatted to.
const RuffLineLength = 100

// FormatPython formats generated Python with the ruff pinned in the
// validator's venv (validators/harness/requirements.txt), so what pallasify
// writes reads like code a person formatted. Without that ruff (no venv, an
// older one) src comes back unchanged: formatting never blocks a draft, and
// a formatter that is not the pinned one never decides the output.
func FormatPython(ctx context.Context, src string) string {
	return FormatPythonWidth(ctx, src, RuffLineLength)
}

// FormatPythonWidth is FormatPython at line length width: a file written
// into the user's tree is formatted to the repository's own limit.
func FormatPythonWidth(ctx context.Context, src string, width int) string {
	ruff := pinnedRuff()
	if ruff == "" {
		return src
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ruff, "format", "--isolated", "--line-length", strconv.Itoa(width), "--stdin-filename", "generated.py", "-")
	cmd.Stdin = bytes.NewReader([]byte(src))
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil || out.Len() == 0 {
		return src
	}
	return out.String()
}

// pinnedRuff is the venv's ruff: next to $PALLASIFY_PYTHON, else in the
// nearest .venv above the working directory (as the validator finds its
// Python).
func pinnedRuff() string {
	if p := os.Getenv("PALLASIFY_PYTHON"); p != "" {
		r := filepath.Join(filepath.Dir(p), "ruff")
		if isExec(r) {
			return r
		}
		return ""
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := dir; ; d = filepath.Dir(d) {
		if r := filepath.Join(d, ".venv", "bin", "ruff"); isExec(r) {
			return r
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
