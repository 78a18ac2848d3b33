package pipeline

import "github.com/pallasify/pallasify/transforms/triton"

// TritonCodes documents the PTR family: why the Triton rule translator
// (transforms/triton) did not draft a kernel.
func TritonCodes() []CodeDoc {
	var out []CodeDoc
	for _, c := range triton.Codes() {
		out = append(out, CodeDoc{Code: c.Code, Name: c.Name, Severity: SevInfo, Title: c.Title, Doc: c.Doc})
	}
	return out
}
