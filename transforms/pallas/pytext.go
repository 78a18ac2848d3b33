package pallas

import "strings"

// Text helpers for the Python that wiring writes, shared by the CUDA wiring
// here and the Triton wiring (transforms/triton).

// IndentLines prefixes every line of s with indent.
func IndentLines(indent, s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = indent + l
		}
	}
	return strings.Join(lines, "")
}

// InsertAfterImports inserts text after the module's leading import block
// (docstring, comments and blank lines before it kept in place).
func InsertAfterImports(body, text string) string {
	lines := strings.SplitAfter(body, "\n")
	end := 0 // byte offset after the last import line
	off := 0
	inParen := false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		off += len(l)
		switch {
		case inParen:
			if strings.Contains(t, ")") {
				inParen = false
				end = off
			}
		case strings.HasPrefix(t, "import ") || strings.HasPrefix(t, "from "):
			if strings.HasSuffix(t, "(") {
				inParen = true
				continue
			}
			end = off
		case t == "" || strings.HasPrefix(t, "#"):
		default:
			return body[:end] + text + body[end:]
		}
	}
	return body[:end] + text + body[end:]
}

// WrapText fills a paragraph to width columns.
func WrapText(s string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(s) {
		switch {
		case n == 0:
		case n+1+len(word) > width:
			b.WriteString("\n")
			n = 0
		default:
			b.WriteString(" ")
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	b.WriteString("\n")
	return b.String()
}
