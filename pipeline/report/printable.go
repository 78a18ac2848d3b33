package report

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// printable is the writer under the text and Markdown reports: what a tree
// puts in its file names and code (an escape sequence in a name, a carriage
// return, bytes that are not UTF-8) reaches a terminal or a Markdown page
// escaped, never as raw control bytes. Newlines and tabs (the layout) pass;
// every other C0 control, DEL and C1 control is written as \xNN (\u00NN for
// C1), and each byte of an invalid UTF-8 sequence as \xNN. A rune split
// across two writes is held until its rest arrives.
type printable struct {
	w    io.Writer
	held []byte
	buf  []byte
}

// Printable escapes s as the text and Markdown reports do.
func Printable(s string) string {
	var p printable
	p.buf = p.escape(p.buf[:0], []byte(s), true)
	return string(p.buf)
}

func (p *printable) Write(b []byte) (int, error) {
	in := b
	if len(p.held) > 0 {
		in = append(p.held, b...)
		p.held = nil
	}
	p.buf = p.escape(p.buf[:0], in, false)
	if _, err := p.w.Write(p.buf); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Close writes out a held incomplete rune (escaped as invalid bytes).
func (p *printable) Close() error {
	if len(p.held) == 0 {
		return nil
	}
	p.buf = p.escape(p.buf[:0], p.held, true)
	p.held = nil
	_, err := p.w.Write(p.buf)
	return err
}

// escape appends b to out, escaped; unless final, an incomplete rune at the
// end is held for the next write.
func (p *printable) escape(out, b []byte, final bool) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f) {
				out = append(out, c)
			} else {
				out = fmt.Appendf(out, `\x%02x`, c)
			}
			i++
			continue
		}
		if !final && !utf8.FullRune(b[i:]) {
			p.held = append(p.held[:0], b[i:]...)
			break
		}
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = fmt.Appendf(out, `\x%02x`, c)
		case r >= 0x80 && r < 0xa0:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}
