package rule_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// longDiag reports x.is_cuda with a message as long as cuda-backend-flags'
// (PDX004, 170 characters), the --mark comment `make demo`'s fixture
// (ddp_amp_train) would carry on one 194-character line.
var longDiag = &rule.Rule{
	Code: "PXX005", Name: "long-diag", Doc: "Diag.", Safety: rule.DisplayOnly,
	Run: func(p *rule.Pass) {
		ts.Walk(p.Tree.Root(), func(n *ts.Node) bool {
			if n.Type() == "attribute" && p.Text(n) == "x.is_cuda" {
				p.Report(rule.Finding{Start: int(n.StartByte()), End: int(n.EndByte()),
					Message: "`torch.backends.cudnn.benchmark`: cuDNN autotuning has no TPU meaning; performance comes " +
						"from torch.compile(backend=\"tpu\"); guard with `if DEVICE.type == \"cuda\":` or drop"})
			}
			return true
		})
	},
}

// TestMarkWrapsAtLineLength: a --mark comment is a line a rewrite writes, so
// it respects Options.LineLength like the rest (the line printer leaves
// comments alone): wrapped at words under its "# pallasify: CODE" line, at
// the statement's indentation, the whole message kept, and a second pass
// finds the site marked and changes nothing.
func TestMarkWrapsAtLineLength(t *testing.T) {
	in := "def f(x):\n    if x.is_cuda:\n        pass\n"
	for _, limit := range []int{100, 79} {
		e := &rule.Engine{Rules: []*rule.Rule{longDiag}, Opts: rule.Options{Target: rule.Portable, Mark: true, LineLength: limit}}
		r := run(t, e, in)
		out := string(r.Output)
		var marks []string
		for _, l := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(l); n > limit {
				t.Errorf("limit %d: %d-character line %q", limit, n, l)
			}
			if strings.HasPrefix(strings.TrimLeft(l, " "), "#") {
				if !strings.HasPrefix(l, "    #") {
					t.Errorf("limit %d: mark line %q not at the statement's indentation", limit, l)
				}
				marks = append(marks, strings.TrimPrefix(strings.TrimLeft(l, " "), "#"))
			}
		}
		if len(marks) < 2 || !strings.HasPrefix(marks[0], " pallasify: PXX005 `torch.backends") {
			t.Fatalf("limit %d: marks %q in:\n%s", limit, marks, out)
		}
		if got := strings.Join(strings.Fields(strings.Join(marks, " ")), " "); !strings.HasSuffix(got, "or drop") ||
			!strings.Contains(got, "performance comes from torch.compile") {
			t.Errorf("limit %d: the mark's message was cut: %q", limit, got)
		}
		if r2 := run(t, e, out); r2.Output != nil {
			t.Errorf("limit %d: second pass changed:\n%s", limit, r2.Output)
		}
	}
	// without a limit (rule tests) the mark stays one line
	e := &rule.Engine{Rules: []*rule.Rule{longDiag}, Opts: rule.Options{Target: rule.Portable, Mark: true}}
	if out := string(run(t, e, in).Output); strings.Count(out, "#") != 1 {
		t.Errorf("no limit: %s", out)
	}
}

// TestMarkStaysAboveWrappedStatement: a fix in the statement of a marked
// site makes it longer than the limit, so the line printer spreads it over
// several lines and the site lands on a line of its own; the mark stays
// above the statement, where a second pass looks for it and finds it (it
// went above the site's own line, and a second pass added it again inside
// the brackets: FuzzEngine with the pipeline's options).
func TestMarkStaysAboveWrappedStatement(t *testing.T) {
	e := &rule.Engine{Rules: []*rule.Rule{widen, longDiag},
		Opts: rule.Options{Target: rule.Portable, Mark: true, LineLength: rule.DefaultLineLength}}
	r := run(t, e, "def f(x):\n    y = g(CHECK, x.is_cuda)\n")
	out := string(r.Output)
	if i, j := strings.Index(out, "# pallasify: PXX005"), strings.Index(out, "y = g("); i < 0 || j < 0 || i > j {
		t.Fatalf("the mark is not above the statement:\n%s", out)
	}
	if !strings.Contains(out, "        x.is_cuda") {
		t.Fatalf("the statement was not spread over several lines:\n%s", out)
	}
	if r2 := run(t, e, out); r2.Output != nil {
		t.Errorf("second pass changed:\n%s", r2.Output)
	}
}
