package pipeline

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/repofs"
	"github.com/pallasify/pallasify/transforms/rule"
)

// The line limit every line a rewrite writes respects (rule.Options.LineLength)
// is the repository's own, read from the root's configuration in this order:
// ruff (`line-length` in ruff.toml, .ruff.toml or [tool.ruff] of
// pyproject.toml), black ([tool.black] line-length), flake8 (max-line-length
// in .flake8, setup.cfg or tox.ini, sections [flake8]). A ruff or black
// section without a line-length means their default, 88. With none of them
// the limit is rule.DefaultLineLength.

// lineLength returns the repository's line limit (see above).
func lineLength(root string) int {
	read := func(name string) []byte {
		b, err := repofs.ReadFile(root, name, 1<<20)
		if err != nil {
			return nil
		}
		return b
	}
	for _, name := range []string{"ruff.toml", ".ruff.toml"} {
		if b := read(name); b != nil {
			if n, ok := iniValue(b, "", "line-length"); ok {
				return n
			}
			return 88
		}
	}
	if b := read("pyproject.toml"); b != nil {
		for _, sec := range []string{"tool.ruff", "tool.black"} {
			if n, ok := iniValue(b, sec, "line-length"); ok {
				return n
			}
		}
		for _, sec := range []string{"tool.ruff", "tool.black"} {
			if hasSection(b, sec) {
				return 88
			}
		}
	}
	for _, name := range []string{".flake8", "setup.cfg", "tox.ini"} {
		if b := read(name); b != nil {
			for _, key := range []string{"max-line-length", "max_line_length"} {
				if n, ok := iniValue(b, "flake8", key); ok {
					return n
				}
			}
		}
	}
	return rule.DefaultLineLength
}

// iniValue reads an integer key = value (or key: value) from section of an
// INI or TOML file ("" for the keys before any section header). Values
// outside 40..1000 are ignored as a misreading.
func iniValue(b []byte, section, key string) (int, bool) {
	cur := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "[") {
			cur = strings.Trim(l, "[] \t")
			continue
		}
		if cur != section {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			k, v, ok = strings.Cut(l, ":")
		}
		if !ok || strings.TrimSpace(k) != key {
			continue
		}
		v, _, _ = strings.Cut(v, "#")
		v, _, _ = strings.Cut(v, ";")
		n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(v), `"'`))
		if err == nil && n >= 40 && n <= 1000 {
			return n, true
		}
	}
	return 0, false
}

// hasSection reports whether the TOML b has the table section or one of
// its subtables ([tool.ruff.lint]).
func hasSection(b []byte, section string) bool {
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "[") {
			continue
		}
		l = strings.Trim(l, "[] \t")
		if l == section || strings.HasPrefix(l, section+".") {
			return true
		}
	}
	return false
}
