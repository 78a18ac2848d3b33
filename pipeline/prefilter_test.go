package pipeline

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/rule"
)

func TestPrefilterWordsAndParts(t *testing.T) {
	word := &rule.Rule{Code: "W", Needles: []string{`\bcuda\b`}}
	pre := &rule.Rule{Code: "P", Needles: []string{`\bflash_attn`}}
	and := &rule.Rule{Code: "A", Needles: []string{`\bpipeline\b & \bdevice`, "device_map"}}
	call := &rule.Rule{Code: "C", Needles: []string{`\bpipeline\( & \bdevice`}}
	kw := &rule.Rule{Code: "K", Needles: []string{`\bfrom_pretrained\( & \bdevice_map\=`}}
	mod := &rule.Rule{Code: "M", Needles: []string{`\q\m\bbnb\b`}}
	all := []*rule.Rule{word, pre, and, call, kw, mod}
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
		{"pipeline('x', device=0)", "A,C"},
		{"device = 0\np = pipeline('x')", "A,C"},
		{"mypipeline('x', device=0)", ""},
		{"from_pretrained(device_map='auto')", "A,K"},
		{"a_cuda cuda_b cuda", "W"},
		{"pipeline (  # c\n 'x', device=0)", "A,C"},
		{"from transformers import pipeline\ndevice = 0", "A"},
		{"pipeline\\\n('x', device_map=m)", "A,C"},
		{"m.from_pretrained(p, device_map  # c\n = 'auto')", "A,K"},
		{"m.from_pretrained(p, device_map\\\n='auto')", "A,K"},
		{"m.from_pretrained(p)\nif 'device_map' in cfg: pass", "A"},
		{"m.from_pretrained(p)\nif device_map == x: pass", "A"},
		{"m.from_pretrained(p, my_device_map=0)", "A"},
		{"m.from_pretrained(p, device_map=", "A,K"},
		{"m.from_pretrained(p, device_map", "A"},
		{"import bnb", "M"},
		{"import os, bnb.nn as b", "M"},
		{"from bnb import x", "M"},
		{"from ..quantizers.bnb import x", ""},
		{"from .bnb import x", ""},
		{"x = pkg.bnb", ""},
		{"bnb", "M"},
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

// TestPrefilterMatchesReference checks the automaton against the plain
// reference (rule.Rule.MayReport) for every rule on every example and golden
// input, and on random texts spliced from the rules' needles.
func TestPrefilterMatchesReference(t *testing.T) {
	rules := defaultRules()
	pf := newPrefilter(rules)
	var inputs [][]byte
	for _, r := range rules {
		inputs = append(inputs, []byte(r.Example.Before))
	}
	goldens, _ := filepath.Glob(filepath.Join("..", "transforms", "*", "testdata", "*", "input.py"))
	for _, g := range goldens {
		if b, err := os.ReadFile(g); err == nil {
			inputs = append(inputs, b)
		}
	}
	var pieces []string
	for _, r := range rules {
		for _, nd := range r.Needles {
			for _, part := range strings.Split(nd, " & ") {
				text, _, _, _ := rule.NeedlePart(part)
				pieces = append(pieces, text, text[:len(text)/2])
			}
		}
	}
	pieces = append(pieces, "_", "x", " ", ".", "\n", "(", "\"", "#", "\\", "=", "==")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for n := rng.IntN(12); n >= 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		inputs = append(inputs, []byte(b.String()))
	}
	for _, in := range inputs {
		sel, _ := pf.Select(in)
		got := map[string]bool{}
		for _, r := range sel {
			got[r.Code] = true
		}
		for _, r := range rules {
			if want := r.MayReport(in); got[r.Code] != want {
				t.Fatalf("%s on %q: automaton %v, reference %v", r.Code, in, got[r.Code], want)
			}
		}
	}
}

// TestPrefilterScanHalves: scan, which walks a long file as two halves at
// once, reports the positions and states a plain walk from the file's start
// does, in the same order, whatever the length and wherever the needle parts
// lie: across the middle, at the second half's start, at the file's ends.
func TestPrefilterScanHalves(t *testing.T) {
	pf := newPrefilter(defaultRules(), kernels.PythonNeedles)
	plain := func(src []byte) []int {
		var got []int
		s := int32(0)
		for pos := range src {
			if s = pf.delta[int(s)<<8|int(src[pos])]; s >= pf.firstOut {
				got = append(got, pos, int(s))
			}
		}
		return got
	}
	var parts []string
	for _, r := range defaultRules() {
		for _, nd := range r.Needles {
			for _, part := range strings.Split(nd, " & ") {
				if text, _, _, _ := rule.NeedlePart(part); text != "" {
					parts = append(parts, text)
				}
			}
		}
	}
	parts = append(parts, kernels.PythonNeedles...)
	l, rng := pf.longest, rand.New(rand.NewPCG(7, 8))
	fill := []byte("x = torch.cud(a)  # cuda\n")
	halves := 0
	for _, n := range []int{0, 1, 4*l + 63, 4*l + 64, 4*l + 65, 1000, 1001, 4096, 20000} {
		for trial := 0; trial < 60; trial++ {
			src := make([]byte, n)
			for i := range src {
				src[i] = fill[rng.IntN(len(fill))]
			}
			mid := (n + l - 1) / 2
			for k := rng.IntN(6); k >= 0 && n > 0; k-- {
				p := []byte(parts[rng.IntN(len(parts))])
				// around the middle, the second half's start, or anywhere
				at := []int{mid - len(p) + rng.IntN(2*len(p)+1), mid - l + 1 + rng.IntN(3) - 1, rng.IntN(n), n - len(p), 0}[rng.IntN(5)]
				at = max(0, min(at, n-len(p)))
				if at >= 0 && at+len(p) <= n {
					copy(src[at:], p)
				}
			}
			var got []int
			pf.scan(src, func(pos int, s int32) { got = append(got, pos, int(s)) })
			if want := plain(src); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("n=%d: scan %v, plain walk %v", n, got, want)
			}
			if n >= 4*l+64 {
				halves++
			}
		}
	}
	if halves == 0 {
		t.Fatal("no input was long enough to be walked as two halves")
	}
}
