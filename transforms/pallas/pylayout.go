package pallas

import (
	"strings"
)

// Layout of the lines wiring writes into a user's Python: each comes out as
// `ruff format` (line length maxLine) writes it, so that formatting the
// migrated file changes none of them, and none of the user's own lines is
// reformatted to get there.

// BlankBefore is "\n" where ruff format wants an empty line before a
// statement written at src[start] (a line start): right after an import
// statement at the same indentation (ruff puts one empty line between an
// import and the statement after it that is not an import, a comment
// included). It is "" where the statement written is itself an import.
func BlankBefore(src string, start int, stmt string) string {
	if isImportLine(strings.TrimLeft(stmt, " \t")) || start == 0 {
		return ""
	}
	prev, ok := prevLine(src, start)
	if !ok || strings.TrimSpace(prev) == "" {
		return ""
	}
	if indentOf(prev) != indentOf(stmt) {
		return ""
	}
	if endsImport(src, start) {
		return "\n"
	}
	return ""
}

// BlankAfter is "\n" where ruff format wants an empty line after an import
// written to end at src[end] (a line start, just past its newline): the
// next line is a statement or a comment at the same indentation and not an
// import.
func BlankAfter(src string, end int, indent string) string {
	if end >= len(src) {
		return ""
	}
	next, _, _ := strings.Cut(src[end:], "\n")
	if strings.TrimSpace(next) == "" || indentOf(next) != indent {
		return ""
	}
	if isImportLine(strings.TrimLeft(next, " \t")) {
		return ""
	}
	return "\n"
}

// prevLine is the line before the one starting at src[start].
func prevLine(src string, start int) (string, bool) {
	if start <= 0 || src[start-1] != '\n' {
		return "", false
	}
	before := src[:start-1]
	return before[strings.LastIndexByte(before, '\n')+1:], true
}

// endsImport reports whether the line before src[start] ends an import
// statement: an import line, or the `)` closing a parenthesised
// `from m import (...)`.
func endsImport(src string, start int) bool {
	prev, _ := prevLine(src, start)
	t := strings.TrimSpace(prev)
	if isImportLine(strings.TrimLeft(prev, " \t")) && !strings.HasSuffix(t, "(") && !strings.HasSuffix(t, "\\") {
		return true
	}
	if !strings.HasPrefix(t, ")") {
		return false
	}
	in := indentOf(prev)
	lines := strings.Split(src[:start], "\n")
	for i := len(lines) - 3; i >= 0; i-- {
		l := lines[i]
		if strings.TrimSpace(l) == "" || indentOf(l) != in {
			continue
		}
		s := strings.TrimLeft(l, " \t")
		return strings.HasPrefix(s, "from ") && strings.HasSuffix(strings.TrimSpace(strings.SplitN(s, "#", 2)[0]), "(")
	}
	return false
}

// isImportLine reports whether s (a line without its indentation) starts an
// import statement.
func isImportLine(s string) bool {
	return strings.HasPrefix(s, "import ") || strings.HasPrefix(s, "from ") && strings.Contains(s, " import ")
}

func indentOf(line string) string {
	return line[:len(line)-len(strings.TrimLeft(line, " \t"))]
}

// ConditionalLines is a conditional expression `a if cond else b` the way
// ruff format writes it in parentheses at indent (each of a, cond and b
// already at most one line, or a's and b's own lines): inner is one line
// inside the parentheses when it fits, else a, `if cond` and `else b` each
// on a line, a condition too long for its line split at its top-level
// `and`s. The parentheses themselves are the caller's.
func ConditionalLines(indent, a, cond, b string) string {
	in := indent + "    "
	one := a + " if " + cond + " else " + b
	if !strings.Contains(one, "\n") && len(in)+len(one) <= maxLine {
		return in + one
	}
	ifLine := in + "if " + cond
	if len(ifLine) > maxLine && strings.Contains(cond, " and ") {
		ifLine = in + "if " + strings.ReplaceAll(cond, " and ", "\n"+in+"and ")
	}
	return in + a + "\n" + ifLine + "\n" + in + "else " + b
}
