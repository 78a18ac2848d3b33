package pipeline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
)

// TestLineLength: the limit comes from the repository's ruff, black or
// flake8 configuration, in that order, else rule.DefaultLineLength.
func TestLineLength(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  int
	}{
		{"none", map[string]string{"setup.py": "x = 1\n"}, rule.DefaultLineLength},
		{"ruff in pyproject", map[string]string{"pyproject.toml": "[project]\nname = \"x\"\n\n[tool.ruff]\ntarget-version = \"py39\"\nline-length = 120\n"}, 120},
		{"black in pyproject", map[string]string{"pyproject.toml": "[tool.black]\nline-length = 110  # wide\n"}, 110},
		{"ruff section without line-length: ruff's 88", map[string]string{"pyproject.toml": "[tool.ruff.lint]\nselect = [\"E\"]\n"}, 88},
		{"ruff.toml", map[string]string{"ruff.toml": "line-length = 99\n[lint]\nselect = [\"E\"]\n", "pyproject.toml": "[tool.black]\nline-length = 70\n"}, 99},
		{"flake8 in setup.cfg", map[string]string{"setup.cfg": "[metadata]\nname = x\n\n[flake8]\nmax-line-length = 120\n"}, 120},
		{"flake8 in tox.ini, underscore key", map[string]string{"tox.ini": "[flake8]\nmax_line_length: 111\n"}, 111},
		{"ruff before flake8", map[string]string{"pyproject.toml": "[tool.ruff]\nline-length = 100\n", "setup.cfg": "[flake8]\nmax-line-length = 79\n"}, 100},
		{"nonsense value ignored", map[string]string{"pyproject.toml": "[tool.black]\nline-length = \"wide\"\n"}, 88},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range c.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := lineLength(dir); got != c.want {
				t.Errorf("lineLength(%v) = %d; want %d", c.files, got, c.want)
			}
		})
	}
}
