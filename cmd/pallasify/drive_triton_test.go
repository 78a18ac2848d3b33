package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestAnalyzeDrivesTritonLaunchers: `pallasify analyze` with no flag on
// fixtures/triton_drive (Triton launchers, no tests) drives each launcher
// under Triton's interpreter in the sandbox and takes the kernels' specs
// from the launches (spec source "driven"): row_sum's runtime constexprs,
// scale_rows after its assert chose 128 columns, rms_norm through its view.
// A kernel without a captured spec says why with a code (the half-only
// launcher's float16 launches do not fit the float32 spec the rules
// inferred; a launch in a nested function is PTR010). The golden is
// fixtures/triton_drive/want.drive.txt (PALLASIFY_UPDATE=1 rewrites it).
// Before driving existed every kernel was "static" or "none" with no
// launch captured; with --drive=false it still is.
func TestAnalyzeDrivesTritonLaunchers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Triton's interpreter (-short)")
	}
	needVenv(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	root := filepath.Join("..", "..", "fixtures", "triton_drive")
	got := analyzeKernels(t, root)
	want := filepath.Join(root, "want.drive.txt")
	if os.Getenv("PALLASIFY_UPDATE") != "" {
		if err := os.WriteFile(want, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(b) {
		t.Errorf("analyze's kernels differ from %s:\n--- got\n%s--- want\n%s", want, got, b)
	}
	// the second run reads the drive from the cache: the same report
	if again := analyzeKernels(t, root); again != got {
		t.Errorf("second (cached) run differs:\n%s", again)
	}
	off := analyzeKernels(t, root, "--drive=false")
	if strings.Contains(off, "spec driven") {
		t.Errorf("--drive=false still drove:\n%s", off)
	}
}

func analyzeKernels(t *testing.T, root string, flags ...string) string {
	t.Helper()
	io, out, errOut := testStreams()
	args := append([]string{"analyze", "--format", "json"}, flags...)
	if code := run(append(args, root), io); code != 0 && code != 1 {
		t.Fatalf("analyze exit %d: %s", code, errOut)
	}
	var rep struct {
		Kernels []struct {
			Name        string `json:"name"`
			SpecSource  string `json:"spec_source"`
			Captured    int    `json:"captured"`
			BuildReason *struct {
				Code string `json:"code"`
				Text string `json:"text"`
			} `json:"build_reason"`
		} `json:"kernels"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var lines []string
	for _, k := range rep.Kernels {
		line := fmt.Sprintf("%s: spec %s, %d launch(es) captured", k.Name, k.SpecSource, k.Captured)
		if k.BuildReason != nil {
			line += fmt.Sprintf("; %s: %s", k.BuildReason.Code, k.BuildReason.Text)
		}
		lines = append(lines, line)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}
