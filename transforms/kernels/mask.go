package kernels

import (
	"regexp"
	"sort"
)

// Masked is one CUDA construct blanked out of a source before it is parsed with
// the cpp grammar. Start and End are byte offsets into the original source;
// Text is the original text of the span.
type Masked struct {
	Kind  string `json:"kind"` // a qualifier (e.g. "__global__"), "__launch_bounds__" or "launch"
	Start int    `json:"start"`
	End   int    `json:"end"`
	Text  string `json:"text"`
}

var qualifierRE = regexp.MustCompile(`\b(__global__|__device__|__host__|__shared__|__constant__|__managed__|__forceinline__|__noinline__|__inline__)\b`)

var parenHeadRE = regexp.MustCompile(`\b(__launch_bounds__|__align__|__maxnreg__)\s*\(`)

// Mask blanks CUDA qualifiers, __launch_bounds__(…) and each <<<…>>> launch
// configuration with spaces of equal length (newlines kept), so the result
// parses with the tree-sitter cpp grammar and byte offsets still index src.
// It returns the masked copy and the masked spans in source order. Comments
// and string literals are left alone.
func Mask(src []byte) ([]byte, []Masked) {
	out := make([]byte, len(src))
	copy(out, src)
	skip := literalSpans(src)
	inSkip := func(i int) bool {
		k := sort.Search(len(skip), func(j int) bool { return skip[j][1] > i })
		return k < len(skip) && skip[k][0] <= i
	}
	var ms []Masked
	blank := func(kind string, s, e int) {
		for i := s; i < e; i++ {
			if out[i] != '\n' && out[i] != '\r' {
				out[i] = ' '
			}
		}
		ms = append(ms, Masked{Kind: kind, Start: s, End: e, Text: string(src[s:e])})
	}
	for _, m := range qualifierRE.FindAllSubmatchIndex(src, -1) {
		if inSkip(m[0]) {
			continue
		}
		blank(string(src[m[2]:m[3]]), m[0], m[1])
	}
	for _, m := range parenHeadRE.FindAllSubmatchIndex(src, -1) {
		if inSkip(m[0]) {
			continue
		}
		end := matchParen(src, m[1]-1)
		if end < 0 {
			continue
		}
		blank(string(src[m[2]:m[3]]), m[0], end)
	}
	// <<< ... >>>, non-greedy, spanning newlines.
	for i := 0; i+3 <= len(src); i++ {
		if src[i] != '<' || src[i+1] != '<' || src[i+2] != '<' || inSkip(i) {
			continue
		}
		j := i + 3
		for ; j+3 <= len(src); j++ {
			if src[j] == '>' && src[j+1] == '>' && src[j+2] == '>' && !inSkip(j) {
				break
			}
		}
		if j+3 > len(src) {
			break
		}
		blank("launch", i, j+3)
		i = j + 2
	}
	sort.Slice(ms, func(a, b int) bool { return ms[a].Start < ms[b].Start })
	return out, ms
}

// LaunchConfig splits the inside of a masked "<<<…>>>" span into its
// top-level comma-separated arguments (grid, block, shared bytes, stream).
func LaunchConfig(text string) []string {
	if len(text) >= 6 {
		text = text[3 : len(text)-3]
	}
	return splitTop(text, ',')
}

// splitTop splits s at sep characters that are not nested in brackets.
func splitTop(s string, sep byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case sep:
			if depth == 0 {
				out = append(out, trimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if t := trimSpace(s[start:]); t != "" || len(out) > 0 {
		out = append(out, t)
	}
	return out
}

func trimSpace(s string) string {
	i, j := 0, len(s)
	for i < j && isSpace(s[i]) {
		i++
	}
	for j > i && isSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// matchParen returns the offset just past the parenthesis matching the one at
// open, or -1.
func matchParen(src []byte, open int) int {
	depth := 0
	for i := open; i < len(src); i++ {
		switch src[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// literalSpans returns the [start,end) spans of comments, string and char
// literals in C/C++ source, in order.
func literalSpans(src []byte) [][2]int {
	var spans [][2]int
	n := len(src)
	for i := 0; i < n; i++ {
		c := src[i]
		switch {
		case c == '/' && i+1 < n && src[i+1] == '/':
			j := i
			for j < n && src[j] != '\n' {
				j++
			}
			spans = append(spans, [2]int{i, j})
			i = j
		case c == '/' && i+1 < n && src[i+1] == '*':
			j := i + 2
			for j+1 < n && (src[j] != '*' || src[j+1] != '/') {
				j++
			}
			j = min(j+2, n)
			spans = append(spans, [2]int{i, j})
			i = j - 1
		case c == 'R' && i+2 < n && src[i+1] == '"' && (i == 0 || !isIdent(src[i-1])):
			// raw string R"delim( ... )delim"
			k := i + 2
			for k < n && src[k] != '(' && k-i < 20 {
				k++
			}
			if k >= n || src[k] != '(' {
				continue
			}
			end := ")" + string(src[i+2:k]) + "\""
			j := indexFrom(src, end, k)
			if j < 0 {
				j = n
			} else {
				j += len(end)
			}
			spans = append(spans, [2]int{i, j})
			i = j - 1
		case c == '"' || (c == '\'' && !(i > 0 && isHex(src[i-1]) && i+1 < n && isHex(src[i+1]))):
			j := i + 1
			for j < n && src[j] != c && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, n)
			spans = append(spans, [2]int{i, j})
			i = j - 1
		}
	}
	return spans
}

func indexFrom(src []byte, s string, from int) int {
	for i := from; i+len(s) <= len(src); i++ {
		if string(src[i:i+len(s)]) == s {
			return i
		}
	}
	return -1
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
