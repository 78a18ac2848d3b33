package triton

import "github.com/pallasify/pallasify/transforms/codes"

// The PTR family is registered here, where the Triton translator refuses.
func init() {
	for _, c := range Codes() {
		codes.Register("triton", "Triton translation", codes.Code{Code: c.Code, Name: c.Name, Severity: codes.Info, Title: c.Title, Doc: c.Doc})
	}
}
