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

// JaxOpHelper is the Python of _jax_op, the ops modules' one way to reach
// torch_tpu's jax_op (the public torch.tpu.pallas.jax_op, else the internal
// path), imported on first use; the CUDA and the Triton ops modules both
// write it.
const JaxOpHelper = `def _jax_op():
    """torch_tpu's jax_op: the public torch.tpu.pallas.jax_op, else the internal one."""
    try:
        import torch
        import torch_tpu  # noqa: F401  (registers torch.tpu where torch did not load it)

        try:
            return torch.tpu.pallas.jax_op
        except AttributeError:
            from torch_tpu._internal.pallas import jax_op

            return jax_op
    except ImportError as e:
        raise RuntimeError(f"tpu tensors need torch_tpu and jax for the Pallas kernels: {e}") from e
`
