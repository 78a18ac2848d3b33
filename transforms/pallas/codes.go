package pallas

import "github.com/pallasify/pallasify/transforms/codes"

// The PPL family is registered here, where the rule drafter refuses.
func init() {
	for _, c := range Codes() {
		codes.Register("draft", "rule drafter refusal", codes.Code{Code: c.Code, Name: c.Name, Severity: codes.Info, Title: c.Title, Doc: c.Doc})
	}
}
