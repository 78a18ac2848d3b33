package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Draft is the structured reply the prompt asks for (the JSON schema in
// prompts.Schema has exactly these fields, all required).
type Draft struct {
	Explanation string `json:"explanation"`
	Code        string `json:"code"`
}

// How a reply was read.
const (
	ReadJSON   = "json"
	ReadFenced = "fenced"
)

// ErrUnreadable is wrapped when a reply holds neither the JSON object nor a
// fenced Python block.
var ErrUnreadable = errors.New("unreadable reply")

var fenceRE = regexp.MustCompile("(?s)(`{3,})[ \\t]*([A-Za-z0-9_+-]*)[^\\n]*\\n(.*?)\\n[ \\t]*`{3,}")

// ParseReply extracts the candidate module from a reply: the JSON object
// {"explanation", "code"} (possibly inside a ```json fence), else the first
// ```python fenced block (servers that ignore the schema), else an error
// saying what was wrong — it goes back to the model as the next turn.
func ParseReply(content string) (code, how string, err error) {
	s := strings.TrimSpace(content)
	if s == "" {
		return "", "", fmt.Errorf("%w: the reply is empty", ErrUnreadable)
	}
	var jsonErr error
	if body, ok := jsonCandidate(s); ok {
		var d Draft
		dec := json.NewDecoder(bytes.NewReader([]byte(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			jsonErr = fmt.Errorf("the JSON object does not decode: %v", err)
		} else if strings.TrimSpace(d.Code) == "" {
			jsonErr = errors.New(`the JSON object has no "code"`)
		} else {
			code := d.Code
			// Some models fence the code inside the JSON string.
			if m := fenceRE.FindStringSubmatch(code); m != nil && isPythonFence(m[2]) {
				code = m[3]
			}
			return strings.TrimSpace(code) + "\n", ReadJSON, nil
		}
	}
	for _, m := range fenceRE.FindAllStringSubmatch(s, -1) {
		if isPythonFence(m[2]) && strings.Contains(m[3], "def ") {
			return strings.TrimSpace(m[3]) + "\n", ReadFenced, nil
		}
	}
	if jsonErr != nil {
		return "", "", fmt.Errorf("%w: %v, and there is no ```python block", ErrUnreadable, jsonErr)
	}
	return "", "", fmt.Errorf("%w: neither the JSON object {\"explanation\", \"code\"} nor a ```python block", ErrUnreadable)
}

func isPythonFence(lang string) bool {
	switch strings.ToLower(lang) {
	case "", "python", "py", "python3":
		return true
	}
	return false
}

// jsonCandidate returns the JSON text of a reply that looks like JSON.
func jsonCandidate(s string) (string, bool) {
	if strings.HasPrefix(s, "{") {
		return s, true
	}
	if m := fenceRE.FindStringSubmatch(s); m != nil && strings.EqualFold(m[2], "json") {
		return strings.TrimSpace(m[3]), true
	}
	return "", false
}
