package report

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/validators/tpuhost"
)

// VerifyPage is what verify and ops show as one HTML page (WriteVerifyHTML,
// the template set's tpu.html.tmpl): the simulated TPU host's op coverage
// and findings and, for verify, the comparison of the original's and the
// migrated tree's runs.
type VerifyPage struct {
	// Kind is "verify" or "ops".
	Kind    string
	Version string
	Root    string // PATH
	// Against is the migrated tree verify --against compared with ("": PATH
	// migrated in memory).
	Against string
	Command []string
	Target  string   // verify's rewrite target
	Options []string // the run's other settings, one phrase each
	// Result is verify's comparison (nil for ops); Run is ops' one run.
	Result *pipeline.VerifyResult
	Run    *pipeline.VerifyRun
	// TPU is the simulated TPU host's report: nil when verify ran on the
	// plain CPU (no --tpu).
	TPU *tpuhost.Report
}

// opClasses are TorchTPU's coverage classes (validators/tpuhost), in the
// order the page lists them: implemented first.
var opClasses = []struct {
	name, fill, meaning string
	implemented         bool
}{
	{"native", "#2da44e", "a TPU kernel", true},
	{"out", "#4ac26b", "through its .out variant's TPU kernel", true},
	{"composite", "#0969da", "decomposes into other ops, each checked as it runs", true},
	{"fallback", "#cf222e", "TorchTPU's backend fallback: NotImplementedError on a TPU unless its CPU fallback is on", false},
	{"unsupported", "#82071e", "nothing for the device at all", false},
}

type tpuView struct {
	P       *VerifyPage
	Title   string
	Command string
	// Verdict is the page's one-line answer; OK colours it.
	Verdict string
	OK      bool
	// the op coverage
	Ops      []opRow
	MoreOps  int
	AllOps   bool // the table lists every op the command ran, not only those without a TPU kernel
	Classes  []classRow
	ClassBar []segment
	OpCount  int
	Calls    int
	Missing  int // ops without a TPU kernel
	// MissingTone colours their card: red when they count as findings,
	// amber when none reached a tpu tensor (verify), green when none.
	MissingTone string
	Findings    int
	// the runs
	Sides     []sideRow
	Diffs     []string
	MoreDiffs int
}

type opRow struct {
	tpuhost.UnsupportedOp
	Implemented bool
	// Finding is set when the op counts as PTH001 (ops: every op without a
	// TPU kernel; verify: those that reached a tpu tensor).
	Finding bool
}

type classRow struct {
	Name, Fill, Meaning string
	Implemented         bool
	Ops, Calls          int
}

type sideRow struct {
	Name string
	Run  pipeline.VerifyRun
	// Tail is the end of its stderr, when it failed.
	Tail string
}

// WriteVerifyHTML renders p as one self-contained HTML document, with the
// analyze/migrate report's style sheet.
func WriteVerifyHTML(w io.Writer, p *VerifyPage) error {
	v := &tpuView{P: p, Title: "pallasify " + p.Kind + " report", Command: strings.Join(p.Command, " ")}
	if t := p.TPU; t != nil {
		v.opCoverage(t, p.Kind == "ops")
	}
	switch {
	case p.Result != nil:
		r := p.Result
		v.Sides = []sideRow{side("original", r.Original), side("migrated", r.Migrated)}
		v.Diffs = r.Differences
		if len(v.Diffs) > maxListed {
			v.Diffs, v.MoreDiffs = v.Diffs[:maxListed], len(v.Diffs)-maxListed
		}
		v.OK = r.Clean()
		switch {
		case !r.Same():
			v.Verdict = fmt.Sprintf("different behaviour: %s", plural2(len(r.Differences), "difference"))
		case r.TPU != nil && r.TPU.Findings() > 0:
			v.Verdict = fmt.Sprintf("same behaviour, but the simulated TPU host found %s that would fail on a TPU",
				plural2(r.TPU.Findings(), "thing"))
		case r.TPU != nil:
			v.Verdict = "same behaviour, and nothing reached that fails on a TPU"
		default:
			v.Verdict = "same behaviour"
		}
	case p.Run != nil:
		v.Sides = []sideRow{side("command", *p.Run)}
		bad := v.Missing
		if p.TPU != nil {
			bad += len(p.TPU.CUDAOnlyCalls) + len(p.TPU.CustomCUDAOps) + len(p.TPU.DeviceMixups)
		}
		v.OK = bad == 0
		if v.Missing > 0 {
			v.Verdict = fmt.Sprintf("%s of %d without a TPU kernel in TorchTPU", plural2(v.Missing, "op"), v.OpCount)
		} else {
			v.Verdict = fmt.Sprintf("every op of the %d ran has a TPU kernel", v.OpCount)
		}
		if n := bad - v.Missing; n > 0 {
			v.Verdict += fmt.Sprintf("; %s on tpu tensors", plural2(n, "other finding"))
		}
	}
	b := bufio.NewWriter(w)
	if err := htmlTmpl.ExecuteTemplate(b, "tpu.html.tmpl", v); err != nil {
		return err
	}
	return b.Flush()
}

// opCoverage fills the op table (every op when the host recorded them all,
// else those without a TPU kernel), missing ops first, then by calls.
func (v *tpuView) opCoverage(t *tpuhost.Report, ops bool) {
	reached := map[string]bool{}
	for _, u := range t.UnsupportedOps {
		reached[u.Op] = true
	}
	list := t.Ops
	v.AllOps = len(list) > 0
	if !v.AllOps {
		list = t.UnsupportedOps
	}
	implemented := map[string]bool{}
	for _, c := range opClasses {
		implemented[c.name] = c.implemented
	}
	rows := make([]opRow, 0, len(list))
	perClass := map[string]*classRow{}
	for _, op := range list {
		r := opRow{UnsupportedOp: op, Implemented: implemented[op.Class]}
		r.Finding = !r.Implemented && (ops || reached[op.Op])
		rows = append(rows, r)
		v.OpCount++
		v.Calls += op.Count
		if !r.Implemented {
			v.Missing++
		}
		cr := perClass[op.Class]
		if cr == nil {
			cr = &classRow{Name: op.Class, Fill: "#8c959f", Meaning: "unknown class"}
			perClass[op.Class] = cr
		}
		cr.Ops++
		cr.Calls += op.Count
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Implemented != rows[j].Implemented {
			return !rows[i].Implemented
		}
		if rows[i].Count != rows[j].Count {
			return rows[i].Count > rows[j].Count
		}
		return rows[i].Op < rows[j].Op
	})
	if len(rows) > maxListed {
		rows, v.MoreOps = rows[:maxListed], len(rows)-maxListed
	}
	v.Ops = rows
	for _, c := range opClasses {
		cr := perClass[c.name]
		if cr == nil {
			continue
		}
		cr.Fill, cr.Meaning, cr.Implemented = c.fill, c.meaning, c.implemented
		v.Classes = append(v.Classes, *cr)
		delete(perClass, c.name)
	}
	others := make([]string, 0, len(perClass))
	for name := range perClass {
		others = append(others, name)
	}
	slices.Sort(others)
	for _, name := range others {
		v.Classes = append(v.Classes, *perClass[name])
	}
	// the calls by class, as one stacked bar
	x := 0.0
	for _, c := range v.Classes {
		if v.Calls == 0 {
			break
		}
		w := round1(siteBarW * float64(c.Calls) / float64(v.Calls))
		v.ClassBar = append(v.ClassBar, segment{X: x, W: w, Fill: c.Fill, Label: fmt.Sprintf("%s: %s, %s", c.Name, plural2(c.Ops, "op"), plural2(c.Calls, "call"))})
		x = round1(x + w)
	}
	v.Findings = t.Findings()
	switch {
	case v.Missing == 0:
		v.MissingTone = "effort-low"
	case ops || len(t.UnsupportedOps) > 0:
		v.MissingTone = "effort-high"
	default:
		v.MissingTone = "effort-medium"
	}
}

func side(name string, r pipeline.VerifyRun) sideRow {
	s := sideRow{Name: name, Run: r}
	if r.ExitCode != 0 || r.Error != "" {
		lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		s.Tail = strings.Join(lines, "\n")
	}
	return s
}

// pyval shows a value the Python runtime reported (JSON decoded) as Python
// writes it: None, True, False, numbers and strings as they are.
func pyval(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		if v {
			return "True"
		}
		return "False"
	}
	return fmt.Sprint(v)
}
