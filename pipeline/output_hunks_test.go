package pipeline

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestHunkHeadersMatchTheFiles checks every hunk header of a file's diff
// against the files themselves: the lines a hunk shows as context or
// removed are the original's from its old start, and those it shows as
// context or added are the update's from its new start. go-udiff v0.4.1
// numbered the new side of every hunk after an insertion that ends in a
// blank line one too low (timm's legacy_train.py: "@@ -162,7 +170,7 @@"
// where the line is 171), which git apply only takes "with offset".
func TestHunkHeadersMatchTheFiles(t *testing.T) {
	// testdata/hunks: the shape of timm's legacy_train.py before and after
	// --target portable (each distinct line replaced by a stand-in, blank
	// lines kept), on which v0.4.1 went wrong.
	o, err := os.ReadFile("testdata/hunks/original.txt")
	if err != nil {
		t.Fatal(err)
	}
	u, err := os.ReadFile("testdata/hunks/updated.txt")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writeFileDiff(&b, &File{Path: "legacy_train.py", Mode: 0o644, Original: o, Updated: u})
	if err := checkHunks(b.String(), string(o), string(u)); err != nil {
		t.Errorf("legacy_train.py shape: %v\n%s", err, b.String())
	}

	orig := "import torch\nfrom x import y\n\n\ntry:\n    import wandb\n    ok = True\nexcept ImportError:\n    ok = False\n" +
		strings.Repeat("pass\n", 20) + "t = torch.ones(1, device='cuda')\n" + strings.Repeat("pass\n", 10)
	upd := strings.Replace(orig, "from x import y\n\n", "from x import y\n\nDEVICE = torch.device(\n    'cpu'\n)\n\n", 1)
	upd = strings.Replace(upd, "device='cuda'", "device=DEVICE", 1)
	b.Reset()
	writeFileDiff(&b, &File{Path: "m.py", Mode: 0o644, Original: []byte(orig), Updated: []byte(upd)})
	if err := checkHunks(b.String(), orig, upd); err != nil {
		t.Errorf("%v\n%s", err, b.String())
	}
}

// checkHunks verifies a one-file unified diff's hunk headers.
func checkHunks(diff, orig, upd string) error {
	ol, nl := strings.SplitAfter(orig, "\n"), strings.SplitAfter(upd, "\n")
	hunks := 0
	var oi, ni int
	for _, l := range strings.SplitAfter(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "@@ "):
			var os_, oc, ns, nc int
			if _, err := fmt.Sscanf(l, "@@ -%d,%d +%d,%d @@", &os_, &oc, &ns, &nc); err != nil {
				return fmt.Errorf("header %q: %v", l, err)
			}
			oi, ni = os_-1, ns-1
			hunks++
		case hunks == 0, l == "":
		case l[0] == ' ':
			if oi >= len(ol) || ol[oi] != l[1:] || ni >= len(nl) || nl[ni] != l[1:] {
				return fmt.Errorf("hunk %d: context %q is not line %d of the original and line %d of the update", hunks, l, oi+1, ni+1)
			}
			oi, ni = oi+1, ni+1
		case l[0] == '-':
			if oi >= len(ol) || ol[oi] != l[1:] {
				return fmt.Errorf("hunk %d: removed %q is not line %d of the original", hunks, l, oi+1)
			}
			oi++
		case l[0] == '+':
			if ni >= len(nl) || nl[ni] != l[1:] {
				return fmt.Errorf("hunk %d: added %q is not line %d of the update", hunks, l, ni+1)
			}
			ni++
		}
	}
	if hunks < 2 {
		return fmt.Errorf("want 2 hunks, got %d", hunks)
	}
	return nil
}
