package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms"
)

// TestReadmeListsEveryCode keeps the rule tables (transforms/README.md) and
// the code tables (transforms/codes/README.md) in step with the registry and
// the PIO codes.
func TestReadmeListsEveryCode(t *testing.T) {
	readme := ""
	for _, doc := range []string{"README.md", "codes/README.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "transforms", doc))
		if err != nil {
			t.Fatal(err)
		}
		readme += string(b)
	}
	var codes []string
	for _, r := range transforms.All() {
		if !r.Removed {
			codes = append(codes, r.Code)
		}
	}
	for _, r := range transforms.Files() {
		codes = append(codes, r.Code)
	}
	for _, c := range pipeline.IOCodes() {
		codes = append(codes, c.Code)
	}
	for _, c := range codes {
		if !strings.Contains(readme, "| `"+c+"` |") {
			t.Errorf("transforms/README.md and transforms/codes/README.md have no table row for %s", c)
		}
	}
}

// TestRulesRegistry runs `pallasify rules` end to end on the real registry.
func TestRulesRegistry(t *testing.T) {
	io, out, _ := testStreams()
	if code := run([]string{"rules"}, io); code != 0 {
		t.Fatalf("rules exit %d", code)
	}
	for _, r := range transforms.All() {
		if !strings.Contains(out.String(), r.Code) {
			t.Errorf("rules lacks %s", r.Code)
		}
	}
	for _, r := range transforms.All() {
		io, out, _ := testStreams()
		if err := rulesRun(context.Background(), &rulesOptions{IO: io, Code: r.Code}); err != nil {
			t.Errorf("rules %s: %v", r.Code, err)
		}
		if !strings.HasPrefix(out.String(), r.Code+" "+r.Name) {
			t.Errorf("rules %s starts %q", r.Code, strings.SplitN(out.String(), "\n", 2)[0])
		}
	}
	for _, r := range transforms.Files() {
		io, out, _ := testStreams()
		if err := rulesRun(context.Background(), &rulesOptions{IO: io, Code: r.Code}); err != nil {
			t.Errorf("rules %s: %v", r.Code, err)
		}
		for _, want := range []string{r.Code + " " + r.Name, "After, --target portable", "After, --target tpu", r.Example.Before} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("rules %s lacks %q", r.Code, want)
			}
		}
	}
	for _, code := range []string{"V-TPU-COMPILE", "v-mismatch"} {
		io, out, _ := testStreams()
		if err := rulesRun(context.Background(), &rulesOptions{IO: io, Code: code}); err != nil {
			t.Errorf("rules %s: %v", code, err)
		}
		if !strings.HasPrefix(out.String(), strings.ToUpper(code)+" ") || !strings.Contains(out.String(), "validator verdict reason") {
			t.Errorf("rules %s: %q", code, out.String())
		}
	}
	io, _, _ = testStreams()
	if code := run([]string{"migrate", "--target", "gpu", "."}, io); code != 2 {
		t.Errorf("bad --target: exit %d; want 2", code)
	}
}

// TestMigrateCheckRegistry: the real rule set finds a CUDA device string and
// --check exits 1; after --write, --check exits 0.
func TestMigrateCheckRegistry(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "train.py"), []byte("import torch\n\nx = torch.zeros(3, device=\"cuda\")\ny = x.cuda()\n"), 0o644)
	io, _, _ := testStreams()
	if code := run([]string{"migrate", "--check", root}, io); code != 1 {
		t.Fatalf("--check on CUDA code: exit %d; want 1", code)
	}
	io, _, _ = testStreams()
	if code := run([]string{"migrate", "--write", "--target", "tpu", root}, io); code != 0 {
		t.Fatalf("--write: exit %d", code)
	}
	io, out, _ := testStreams()
	if code := run([]string{"migrate", "--check", "--target", "tpu", root}, io); code != 0 {
		t.Errorf("--check after --write: exit %d; want 0\n%s", code, out)
	}
}
