package hostbuild

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunStoppedIsCoded: an entry the sandbox stops at its wall limit comes
// back with the sandbox's code (SBX-TIME), not as a bare exit code -1 — the
// capture report shows it as the entry's failure (issue 32: limit kills
// reached the report only as "failed").
func TestRunStoppedIsCoded(t *testing.T) {
	py := testPython(t)
	sb := testSandbox(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "slow.py"), []byte("import time\ntime.sleep(120)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, sb, RunRequest{Root: root, Python: py, Entry: []string{"slow.py"}, Timeout: 3 * time.Second, CaptureDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || !strings.HasPrefix(res.Stopped, "SBX-TIME") {
		t.Errorf("exit %d, stopped %q; want SBX-TIME", res.ExitCode, res.Stopped)
	}
}
