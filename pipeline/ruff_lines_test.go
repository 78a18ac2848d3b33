package pipeline

import (
	"maps"
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
