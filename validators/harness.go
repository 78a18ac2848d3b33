package validators

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/validators/sandbox"
)

// The Python harness travels inside the binary and is written into each
// validation's sandbox work directory.
//
//go:embed harness/pallasify_harness/*.py harness/requirements.txt
var harnessFS embed.FS

// HarnessHash is the sha256 of the embedded harness sources (its version
// for the verdict cache).
func HarnessHash() string {
	h := sha256.New()
	var names []string
	_ = fs.WalkDir(harnessFS, "harness", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	sort.Strings(names)
	for _, n := range names {
		data, _ := harnessFS.ReadFile(n)
		fmt.Fprintf(h, "%s %d\n", n, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// PinnedJAX is the jax version in the embedded requirements.txt.
func PinnedJAX() string {
	data, err := harnessFS.ReadFile("harness/requirements.txt")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "jax[cpu]=="); ok {
			return rest
		}
		if rest, ok := strings.CutPrefix(line, "jax=="); ok {
			return rest
		}
	}
	return ""
}

// writeHarness writes the harness package under dir (dir/pallasify_harness).
func writeHarness(dir string) error {
	return fs.WalkDir(harnessFS, "harness", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, "harness")
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if path.Ext(p) != ".py" && path.Base(p) != "requirements.txt" {
			return nil
		}
		data, err := harnessFS.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return fmt.Errorf("validate: write harness: %w", err)
		}
		return nil
	})
}

// harnessWork is how every sandboxed harness run starts: the sandbox is
// checked (untrusted code runs nowhere else), the interpreter found, and a
// fresh work directory made with the harness written into it. what names the
// run in errors; the caller removes work.
func harnessWork(ctx context.Context, noSandbox bool, python, what, pattern string) (sb *sandbox.Sandbox, py, work string, err error) {
	sb = &sandbox.Sandbox{Disabled: noSandbox}
	if err := sb.Check(ctx); err != nil {
		return nil, "", "", fmt.Errorf("%s: refusing to run untrusted code: %w", what, err)
	}
	if py, err = findPython(python); err != nil {
		return nil, "", "", err
	}
	if work, err = os.MkdirTemp("", pattern); err != nil {
		return nil, "", "", fmt.Errorf("%s: %w", what, err)
	}
	if err := writeHarness(filepath.Join(work, "harness")); err != nil {
		os.RemoveAll(work)
		return nil, "", "", err
	}
	return sb, py, work, nil
}

// WriteHarness writes the embedded harness package under dir
// (dir/pallasify_harness); the LLM static gate reuses its AST ban.
func WriteHarness(dir string) error { return writeHarness(dir) }

// FindPython returns the interpreter validation uses (explicit, else
// $PALLASIFY_PYTHON, else .venv/bin/python above the working directory, else
// python3).
func FindPython(explicit string) (string, error) { return findPython(explicit) }
