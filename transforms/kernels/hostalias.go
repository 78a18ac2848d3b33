package kernels

import (
	"regexp"
	"strings"
)

// One alias mechanism over host code: the expressions whose tensor is the
// same data as another tensor's. tensorRoot (host.go, shapes) follows the
// same-shape ones; argument mapping (transforms/pallas, which op argument a
// kernel pointer comes from) follows them and the views too, through
// HostTensorOf.

// SameShapeMethods are the tensor methods whose result holds the tensor's
// values in its shape: a contiguous copy, a clone, another dtype or device.
var SameShapeMethods = map[string]bool{"contiguous": true, "expect_contiguous": true, "clone": true, "detach": true,
	"to": true, "type": true, "toType": true, "float": true, "half": true, "bfloat16": true, "double": true, "cuda": true}

// ViewMethods are the tensor methods whose result holds the tensor's
// values in their order under another shape.
var ViewMethods = map[string]bool{"view": true, "reshape": true, "flatten": true}

// dataAccessors give a tensor's data pointer.
var dataAccessors = map[string]bool{"data_ptr": true, "data": true, "mutable_data_ptr": true, "const_data_ptr": true}

var (
	reCppCast   = regexp.MustCompile(`^(?:static_cast|reinterpret_cast|const_cast)\s*<`)
	reCCast     = regexp.MustCompile(`^\(\s*(?:const\s+)?[\w:]+(?:\s*<[^()]*>)?(?:\s+const)?\s*\*+\s*\)`)
	reIdentHead = regexp.MustCompile(`^[A-Za-z_]\w*`)
	reMethod    = regexp.MustCompile(`^\s*(?:\.|->)\s*([A-Za-z_]\w*)\s*(?:<[^<>()]*>)?\s*\(`)
)

// HostTensorOf reads a host (C++) expression as a tensor and the same-data
// methods called on it: "a", "a.contiguous()", "a.to(at::kFloat).view({-1})"
// give a; with a data accessor last ("static_cast<float*>(a.contiguous().
// data_ptr<float>())", "(float*)a_c.data_ptr()") ptr is true. ok is false
// for anything else (a call of another function, arithmetic, an index).
func HostTensorOf(expr string) (name string, ptr, ok bool) {
	s := stripHostCasts(strings.TrimSpace(expr))
	root := reIdentHead.FindString(s)
	if root == "" {
		return "", false, false
	}
	rest := s[len(root):]
	for strings.TrimSpace(rest) != "" {
		if ptr {
			return "", false, false // something after the data pointer
		}
		m := reMethod.FindStringSubmatchIndex(rest)
		if m == nil {
			return "", false, false
		}
		method := rest[m[2]:m[3]]
		end := closeParen(rest, m[1]-1)
		if end < 0 {
			return "", false, false
		}
		switch {
		case dataAccessors[method]:
			if strings.TrimSpace(rest[m[1]:end]) != "" {
				return "", false, false
			}
			ptr = true
		case SameShapeMethods[method] || ViewMethods[method]:
		default:
			return "", false, false
		}
		rest = rest[end+1:]
	}
	return root, ptr, true
}

// stripHostCasts removes casts and parentheses around a C++ expression.
func stripHostCasts(s string) string {
	for range 8 {
		s = strings.TrimSpace(s)
		switch {
		case reCppCast.MatchString(s):
			open := strings.IndexByte(s, '(')
			if open < 0 || closeParen(s, open) != len(s)-1 {
				return s
			}
			s = s[open+1 : len(s)-1]
		case strings.HasPrefix(s, "(") && closeParen(s, 0) == len(s)-1:
			s = s[1 : len(s)-1]
		case reCCast.MatchString(s):
			s = s[len(reCCast.FindString(s)):]
		default:
			return s
		}
	}
	return s
}

// closeParen is the index of the parenthesis closing the one at open, or -1.
func closeParen(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}
