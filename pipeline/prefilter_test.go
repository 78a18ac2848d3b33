package pipeline

import (
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
)

func TestPrefilterWordsAndParts(t *testing.T) {
	word := &rule.Rule{Code: "W", Needles: []string{`\bcuda\b`}}
	pre := &rule.Rule{Code: "P", Needles: []string{`\bflash_attn`}}
	and := &rule.Rule{Code: "A", Needles: []string{`\bpipeline\b & \bdevice`, "device_map"}}
	all := []*rule.Rule{word, pre, and}
	cases := []struct {
		src, want string
	}{
		{"x = torch.cuda.is_available()", "W"},
		{"cuda", "W"},
		{"d = 'cuda:0'", "W"},
		{"x.is_cuda", ""},
		{"cudaMalloc(p)", ""},
		{"import flash_attn_2_cuda", "P"},
		{"is_flash_attn_available()", ""},
		{"pipeline('x')", ""},
		{"pipeline('x', device=0)", "A"},
		{"device = 0\np = pipeline('x')", "A"},
		{"mypipeline('x', device=0)", ""},
		{"from_pretrained(device_map='auto')", "A"},
		{"a_cuda cuda_b cuda", "W"},
	}
	for _, tc := range cases {
		sel, _ := newPrefilter(all).Select([]byte(tc.src))
		var got []string
		for _, r := range sel {
			got = append(got, r.Code)
		}
		if g := strings.Join(got, ","); g != tc.want {
			t.Errorf("Select(%q) = %q; want %q", tc.src, g, tc.want)
		}
	}
}

func TestPrefilterSets(t *testing.T) {
	r := &rule.Rule{Code: "R", Needles: []string{"cuda"}}
	pf := newPrefilter([]*rule.Rule{r}, []string{"load_inline", `\bjit\b`}, []string{"never"})
	sel, sets := pf.Select([]byte("@torch.jit.script\ndef f(): pass\n"))
	if len(sel) != 0 || !sets[0] || sets[1] {
		t.Errorf("Select = %d rules, sets %v; want 0 rules, [true false]", len(sel), sets)
	}
	sel, sets = pf.Select([]byte("x.cuda()  # jitter\n"))
	if len(sel) != 1 || sets[0] || sets[1] {
		t.Errorf("Select = %d rules, sets %v; want 1 rule, [false false]", len(sel), sets)
	}
}
