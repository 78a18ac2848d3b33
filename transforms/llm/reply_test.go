package llm

import (
	"errors"
	"strings"
	"testing"
)

func TestParseReply(t *testing.T) {
	code := "import jax\n\ndef run(args, *, interpret):\n    return {}\n"
	tests := []struct {
		name, in, want, how, err string
	}{
		{name: "json", in: `{"explanation": "e", "code": "import jax\n\ndef run(args, *, interpret):\n    return {}"}`, want: code, how: ReadJSON},
		{name: "json in fence", in: "```json\n{\"explanation\": \"e\", \"code\": \"import jax\\n\\ndef run(args, *, interpret):\\n    return {}\"}\n```", want: code, how: ReadJSON},
		{name: "code fenced inside json", in: `{"explanation": "e", "code": "` + "```python\\nimport jax\\n\\ndef run(args, *, interpret):\\n    return {}\\n```" + `"}`, want: code, how: ReadJSON},
		{name: "fenced", in: "Sure!\n```python\n" + code + "```\nDone.", want: code, how: ReadFenced},
		{name: "long fence", in: "````py\n" + code + "````", want: code, how: ReadFenced},
		{name: "skips non-python fence", in: "```bash\npip install jax\n```\n```python\n" + code + "```", want: code, how: ReadFenced},
		{name: "truncated json", in: `{"explanation": "e", "code": "def run(`, err: "does not decode"},
		{name: "unknown field", in: `{"explanation": "e", "code": "x", "extra": 1}`, err: "does not decode"},
		{name: "empty code", in: `{"explanation": "e", "code": ""}`, err: `no "code"`},
		{name: "prose", in: "I cannot do that.", err: "neither"},
		{name: "empty", in: "  ", err: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, how, err := ParseReply(tt.in)
			if tt.err != "" {
				if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want || how != tt.how {
				t.Fatalf("got %q %q %v", got, how, err)
			}
		})
	}
}
