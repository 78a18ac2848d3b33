package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// nbIndent1 is a notebook as nbformat writes it (indent 1, sorted keys,
// raw UTF-8, trailing newline), with magics, a shell line, a cell magic and
// outputs that mention "cuda".
const nbIndent1 = `{
 "cells": [
  {
   "cell_type": "code",
   "execution_count": 3,
   "metadata": {"tags": ["cuda"]},
   "outputs": [{"name": "stdout", "output_type": "stream", "text": ["d = \"cuda\"\n"]}],
   "source": [
    "%matplotlib inline\n",
    "!nvidia-smi\n",
    "files = !ls\n",
    "d = \"cuda\"  # é\n",
    "if True:\n",
    "    %time d = \"cuda\"\n",
    "    x = \"cuda\""
   ]
  },
  {
   "cell_type": "markdown",
   "metadata": {},
   "source": ["d = \"cuda\""]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "metadata": {},
   "outputs": [],
   "source": ["%%bash\n", "echo \"cuda\"\n"]
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "metadata": {},
   "outputs": [],
   "source": "y = \"cuda\"\nz = 1\n"
  }
 ],
 "metadata": {"kernelspec": {"name": "python3"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
`

func migrateNotebook(t *testing.T, name, src string) (*Run, *File) {
	t.Helper()
	root := writeTree(t, map[string]string{name: src})
	run, err := Migrate(context.Background(), Options{Root: root, Rules: testRules})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range run.Files {
		if f.Path == name {
			return run, f
		}
	}
	t.Fatalf("%s not walked", name)
	return nil, nil
}

func TestNotebookCellsRewritten(t *testing.T) {
	_, f := migrateNotebook(t, "nb.ipynb", nbIndent1)
	if !f.Changed() {
		t.Fatalf("notebook not rewritten; diagnostics %+v", f.Diagnostics)
	}
	got := string(f.Updated)
	// Exactly the code-cell source strings change: "cuda" -> "tpu" in cells
	// 1 and 4, nothing in outputs, metadata, the markdown or the %%bash cell.
	want := strings.NewReplacer(
		`"d = \"cuda\"  # é\n",`, `"d = \"tpu\"  # é\n",`,
		`"    x = \"cuda\""`, `"    x = \"tpu\""`,
		`"source": "y = \"cuda\"\nz = 1\n"`, `"source": "y = \"tpu\"\nz = 1\n"`,
	).Replace(nbIndent1)
	if got != want {
		t.Errorf("rewritten notebook:\n%s\nwant:\n%s", got, want)
	}
	// The %time line keeps its magic (the rules saw it as `pass`).
	if !strings.Contains(got, `"    %time d = \"cuda\"\n"`) || !strings.Contains(got, `"!nvidia-smi\n"`) {
		t.Errorf("magic lines changed:\n%s", got)
	}
	var v any
	if err := json.Unmarshal(f.Updated, &v); err != nil {
		t.Errorf("output is not JSON: %v", err)
	}
	for _, d := range f.Diagnostics {
		if !strings.HasPrefix(d.Message, "cell ") || d.Line < 1 {
			t.Errorf("diagnostic without its cell: %+v", d)
		}
	}
	// Findings point at the file line of the cell line they are about.
	lines := strings.Split(nbIndent1, "\n")
	for _, d := range f.Diagnostics {
		if d.Code == "PTT001" && strings.HasPrefix(d.Message, "cell 1:") && !strings.Contains(lines[d.Line-1], "cuda") {
			t.Errorf("%+v points at %q", d, lines[d.Line-1])
		}
	}
	// A second pass changes nothing.
	_, f2 := migrateNotebook(t, "nb.ipynb", got)
	if f2.Changed() {
		t.Errorf("second pass changed the notebook:\n%s", FileDiff(f2))
	}
}

// TestNotebookStyles: other indentation, compact separators and
// ensure_ascii files keep their style in the lines that change.
func TestNotebookStyles(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"indent4",
			"{\n    \"cells\": [\n        {\n            \"cell_type\": \"code\",\n            \"source\": [\n                \"d = \\\"cuda\\\"\\n\",\n                \"e = 1\"\n            ]\n        }\n    ]\n}",
			"{\n    \"cells\": [\n        {\n            \"cell_type\": \"code\",\n            \"source\": [\n                \"d = \\\"tpu\\\"\\n\",\n                \"e = 1\"\n            ]\n        }\n    ]\n}"},
		{"compact",
			`{"cells":[{"source":["d = \"cuda\"\n","e = 1"],"cell_type":"code"}],"nbformat":4}`,
			`{"cells":[{"source":["d = \"tpu\"\n","e = 1"],"cell_type":"code"}],"nbformat":4}`},
		{"ensure_ascii",
			`{"cells": [{"cell_type": "code", "source": ["s = \"\u00e9\"\n", "d = \"cuda\"  # \u00e9 \ud83d\ude00\n"]}]}` + "\n",
			`{"cells": [{"cell_type": "code", "source": ["s = \"\u00e9\"\n", "d = \"tpu\"  # \u00e9 \ud83d\ude00\n"]}]}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, f := migrateNotebook(t, "nb.ipynb", tc.src)
			if got := string(f.Updated); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestNotebookBadJSON: a .ipynb that is not notebook JSON is left alone.
func TestNotebookBadJSON(t *testing.T) {
	_, f := migrateNotebook(t, "nb.ipynb", `{"cells": [ "d = \"cuda\"`)
	if f.Changed() {
		t.Error("broken notebook rewritten")
	}
}

func TestMaskMagics(t *testing.T) {
	src := "!pip install x \\\n  y\nfor i in r:\n    !echo $i\nv = %env HOME\nhelp?\nq = 1\n"
	masked, saved, ok := maskMagics(src)
	if !ok || len(saved) != 4 {
		t.Fatalf("masked %q saved %q", masked, saved)
	}
	want := "pass  # pallasify-magic-0\nfor i in r:\n    pass  # pallasify-magic-1\npass  # pallasify-magic-2\npass  # pallasify-magic-3\nq = 1\n"
	if masked != want {
		t.Errorf("masked = %q", masked)
	}
	back, ok := unmask(masked, saved)
	if !ok || back != src {
		t.Errorf("unmask = %q, %v", back, ok)
	}
	if _, ok := unmask(strings.Replace(masked, "pass  # pallasify-magic-2\n", "", 1), saved); ok {
		t.Error("a dropped stand-in was accepted")
	}
	if _, _, ok := maskMagics("\n%%bash\necho hi\n"); ok {
		t.Error("a cell magic cell was masked")
	}
}

// notebookCells writes the code cells of each notebook (magics as their
// stand-ins) to .py files under dir, for py_compile.
func notebookCells(t *testing.T, dir string, notebooks []string) []string {
	t.Helper()
	if len(notebooks) > 0 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var files []string
	for i, nb := range notebooks {
		src, err := os.ReadFile(nb)
		if err != nil {
			t.Fatal(err)
		}
		cells, err := parseNotebook(src)
		if err != nil {
			t.Errorf("%s: %v", nb, err)
			continue
		}
		for _, c := range cells {
			masked, _, ok := maskMagics(c.text())
			if !ok {
				continue
			}
			p := filepath.Join(dir, filepath.Base(nb)+"."+strconv.Itoa(i)+".cell"+strconv.Itoa(c.index+1)+".py")
			if err := os.WriteFile(p, []byte(masked), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, p)
		}
	}
	return files
}

// TestNotebookCellNotTakenForNotebook: a cell mentioning "cells" does not
// draw the file-level PDX011 finding (that rule reads whole notebooks).
func TestNotebookCellNotTakenForNotebook(t *testing.T) {
	root := writeTree(t, map[string]string{"nb.ipynb": `{"cells": [{"cell_type": "code", "source": ["cells = 3\n", "d = torch.device(\"cuda\")\n"]}]}` + "\n"})
	run, err := Migrate(context.Background(), Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	f := run.Files[0]
	if !f.Changed() {
		t.Errorf("notebook not rewritten: %+v", f.Diagnostics)
	}
	for _, d := range f.Diagnostics {
		if d.Code == "PDX011" {
			t.Errorf("cell reported as a notebook: %+v", d)
		}
	}
}
