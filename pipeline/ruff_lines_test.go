package pipeline

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWrittenLines: the lines InsertionsFormatted holds to ruff format are
// those the kernel stage wrote and those a rule inserted; a line only
// re-indented and a rule's in-place rewrite are the user's.
func TestWrittenLines(t *testing.T) {
	original := "import torch\n\ndevice = \"cuda\"\nx = load(\n    name=\"x\")\n\n\ndef f(a):\n    return x.f(a)\n"
	rules := "import torch\n\nDEVICE = torch.device(\"cpu\")\n\ndevice = DEVICE.type\nx = load(\n    name=\"x\")\n\n\ndef f(a):\n    return x.f(a)\n"
	migrated := "import torch\n\nDEVICE = torch.device(\"cpu\")\n\ndevice = DEVICE.type\nx = lazy(\n    lambda: load(\n        name=\"x\")\n)\n\n\ndef f(a):\n" +
		"    return ops.f(a) if a.device.type == \"tpu\" else x.f(a)\n"
	ours, edits := writtenLines(original, rules, migrated)
	if got, want := slices.Sorted(maps.Keys(ours)), []int{3, 4, 6, 7, 9, 13}; !slices.Equal(got, want) {
		t.Errorf("ours = %v, want %v", got, want)
	}
	if got, want := slices.Sorted(maps.Keys(edits)), []int{5}; !slices.Equal(got, want) {
		t.Errorf("rule edits = %v, want %v", got, want)
	}
}

// TestRuffChanges: ruff format --diff hunks as the lines of the file they
// replace, an insertion as the two lines around it.
func TestRuffChanges(t *testing.T) {
	diff := "--- a.py\n+++ a.py\n@@ -1,4 +1,5 @@\n \"\"\"Doc.\"\"\"\n+\n import torch\n x = 1\n-y = f(a,\n-   b)\n+y = f(a, b)\n"
	got := ruffChanges(diff)
	if len(got) != 2 || got[0].from != 1 || got[0].to != 2 || got[1].from != 4 || got[1].to != 5 {
		t.Errorf("changes = %+v", got)
	}
}

// TestInsertionProblems: a dispatch laid out over five lines where ruff
// format writes it on one is a problem; the same dispatch as ruff writes
// it, beside the user's own unformatted line, is none.
func TestInsertionProblems(t *testing.T) {
	py := os.Getenv("PALLASIFY_PYTHON")
	ruff := filepath.Join(filepath.Dir(py), "ruff")
	if _, err := os.Stat(ruff); py == "" || err != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") != "" {
			t.Fatalf("the pinned ruff is missing next to $PALLASIFY_PYTHON %q: %v", py, err)
		}
		t.Skip("no pinned ruff")
	}
	original := "import torch\n\n\ndef f(x):\n    y = g( x )\n    return g(x)\n"
	for _, c := range []struct {
		name, updated string
		problems      int
	}{
		{"split where it fits", "import torch\nimport _pallas_ops\n\n\ndef f(x):\n    y = g( x )\n    return (\n        _pallas_ops.g(x)\n" +
			"        if x.device.type == \"tpu\"\n        else g(x)\n    )\n", 1},
		{"as ruff writes it", "import torch\nimport _pallas_ops\n\n\ndef f(x):\n    y = g( x )\n" +
			"    return _pallas_ops.g(x) if x.device.type == \"tpu\" else g(x)\n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, dir := t.TempDir(), t.TempDir()
			for d, s := range map[string]string{root: original, dir: c.updated} {
				if err := os.WriteFile(filepath.Join(d, "m.py"), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			run := &Run{Root: root, Version: "test", Files: []*File{{Path: "m.py", Original: []byte(original), Updated: []byte(c.updated)}}}
			problems, _, checked, err := insertionProblems(ruff, run, dir)
			if err != nil || checked != 1 || len(problems) != c.problems {
				t.Errorf("checked %d, err %v, problems %q (want %d)", checked, err, problems, c.problems)
			}
		})
	}
}
