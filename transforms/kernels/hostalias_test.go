package kernels

import "testing"

// TestHostTensorOf: the host expressions that are a tensor's data (or its
// data pointer) give the tensor; anything else is not one.
func TestHostTensorOf(t *testing.T) {
	for _, c := range []struct {
		expr    string
		name    string
		ptr, ok bool
	}{
		{"a", "a", false, true},
		{"a.contiguous()", "a", false, true},
		{"a.to(at::kFloat).view({-1})", "a", false, true},
		{"a.contiguous().data_ptr<float>()", "a", true, true},
		{"static_cast<const float*>(x.reshape({n, -1}).data_ptr())", "x", true, true},
		{"(float *)x_c.data<float>()", "x_c", true, true},
		{"(x.contiguous()).mutable_data_ptr<scalar_t>()", "", false, false}, // a parenthesised receiver: not followed
		{"x.data_ptr<float>() + offset", "", false, false},
		{"x.t().contiguous()", "", false, false},
		{"at::empty_like(x)", "", false, false},
		{"x.data_ptr<float>().foo()", "", false, false},
	} {
		name, ptr, ok := HostTensorOf(c.expr)
		if name != c.name || ptr != c.ptr || ok != c.ok {
			t.Errorf("HostTensorOf(%q) = %q, %v, %v; want %q, %v, %v", c.expr, name, ptr, ok, c.name, c.ptr, c.ok)
		}
	}
}
