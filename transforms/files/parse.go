package files

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"

	"github.com/pallasify/pallasify/transforms/rule"
)

// wellFormed parses src as its kind says (YAML, JSON, TOML; the line
// formats are not parsed) and returns the problem when it does not parse.
// The parse only checks: the rules read lines and spans, so the output
// keeps every byte the fixes do not touch.
func wellFormed(kind Kind, src []byte) *Problem {
	var err error
	var format string
	switch kind {
	case YAML, Conda, CI:
		format = "YAML"
		dec := yaml.NewDecoder(bytes.NewReader(src))
		for {
			var n yaml.Node
			if err = dec.Decode(&n); err != nil {
				break
			}
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
	case JSON:
		format = "JSON"
		var v any
		if err = json.Unmarshal(src, &v); err != nil && json.Unmarshal(jsonc(src), &v) == nil {
			err = nil // JSON with comments and trailing commas (devcontainer.json, tsconfig.json, VS Code settings)
		}
	case TOML, Pyproject:
		format = "TOML"
		var v map[string]any
		_, err = toml.Decode(string(src), &v)
	}
	if err == nil {
		return nil
	}
	line := errLine(err)
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset <= int64(len(src)) {
		line = bytes.Count(src[:se.Offset], []byte("\n")) + 1
	}
	return &Problem{Code: rule.CodeSyntaxError, Line: line, Message: fmt.Sprintf("the file does not parse as %s (%v); left untouched", format, err)}
}

var lineInErr = regexp.MustCompile(`line (\d+)`)

// errLine is the line a parser's error names (1 when it names none).
func errLine(err error) int {
	var te toml.ParseError
	if errors.As(err, &te) {
		return te.Position.Line
	}
	if m := lineInErr.FindStringSubmatch(err.Error()); m != nil {
		if n, e := strconv.Atoi(m[1]); e == nil && n > 0 {
			return n
		}
	}
	return 1
}

// jsonc returns src with the comments (// and /* */ outside strings) and
// the trailing commas of JSONC removed: JSON the standard parser takes.
func jsonc(src []byte) []byte {
	out := make([]byte, 0, len(src))
	inStr := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inStr:
			out = append(out, c)
			if c == '\\' && i+1 < len(src) {
				i++
				out = append(out, src[i])
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
			out = append(out, c)
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			out = append(out, '\n')
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := bytes.Index(src[i+2:], []byte("*/"))
			if end < 0 {
				return out
			}
			i += end + 3
		case c == ']' || c == '}':
			j := len(out) - 1
			for j >= 0 && (out[j] == ' ' || out[j] == '\t' || out[j] == '\n' || out[j] == '\r') {
				j--
			}
			if j >= 0 && out[j] == ',' {
				out = append(out[:j], out[j+1:]...)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}
