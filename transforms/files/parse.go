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
		err = json.Unmarshal(src, &v)
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
