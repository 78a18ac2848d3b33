package files

import (
	"path"
	"strings"
)

// page is the prose of a rule's documentation; render makes its Markdown
// with the Example's before and after for both targets, so the page and the
// tested example never drift.
type page struct {
	Title  string
	What   string
	Why    string
	Safety string
}

func fence(p string) string {
	switch KindOf(p) {
	case Dockerfile:
		return "dockerfile"
	case Shell:
		return "sh"
	case YAML, CI, Conda:
		return "yaml"
	case JSON:
		return "json"
	case TOML, Pyproject:
		return "toml"
	case SetupPy:
		return "python"
	case SetupCfg:
		return "ini"
	}
	return "text"
}

func render(d page, ex Example) string {
	var b strings.Builder
	b.WriteString(d.Title + "\n\n## What it does\n\n" + strings.TrimSpace(d.What) + "\n\n## Why\n\n" + strings.TrimSpace(d.Why) + "\n\n## Example\n\n")
	block := func(label, p, text string) {
		b.WriteString(label + ":\n\n```" + fence(p) + "\n" + strings.TrimRight(text, "\n") + "\n```\n\n")
	}
	block("Before (`"+ex.Path+"`)", ex.Path, ex.Before)
	for _, t := range []struct {
		name string
		out  Output
	}{{"portable", ex.Portable}, {"tpu", ex.TPU}} {
		label := "After, --target " + t.name
		switch {
		case t.out.Path == "":
			b.WriteString(label + ": unchanged (reported only).\n\n")
		case t.out.Path == ex.Path:
			block(label+" (`"+ex.Path+"` edited in place)", ex.Path, t.out.Text)
		default:
			block(label+" (`"+path.Base(ex.Path)+"` unchanged; new file `"+t.out.Path+"`)", t.out.Path, t.out.Text)
		}
	}
	if d.Safety != "" {
		b.WriteString("## Fix safety\n\n" + strings.TrimSpace(d.Safety) + "\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
