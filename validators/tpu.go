package validators

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultTPUChips are the chips the TPU compile gate compiles a proven
// candidate for unless Options.TPUChips says otherwise.
var DefaultTPUChips = []string{"v5e", "v6e", "tpu7x"}

// KnownTPUChips are the chip names the harness knows (its chip table,
// validators/harness/pallasify_harness/tpu.py, holds their topologies and
// HBM bandwidths; a test keeps the two lists equal).
var KnownTPUChips = []string{"v5e", "v6e", "tpu7x"}

// libtpuReadOnly are the host paths libtpu reads when the TPU compile gate
// loads it in the sandbox: its tcmalloc aborts the process (CHECK in
// NumCPUs) when it cannot read the possible-CPU list.
var libtpuReadOnly = []string{"/sys/devices/system/cpu/possible"}

// ParseTPUChips reads a --tpu-chips value: comma-separated chip names, or
// "none" to turn the TPU compile gate off (off is true then).
func ParseTPUChips(s string) (chips []string, off bool, err error) {
	s = strings.TrimSpace(s)
	if s == "none" {
		return nil, true, nil
	}
	for _, c := range strings.Split(s, ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if !slices.Contains(KnownTPUChips, c) {
			return nil, false, fmt.Errorf("unknown TPU chip %q (known: %s, or none)", c, strings.Join(KnownTPUChips, ", "))
		}
		if !slices.Contains(chips, c) {
			chips = append(chips, c)
		}
	}
	if len(chips) == 0 {
		return nil, false, fmt.Errorf("no TPU chip in %q (known: %s, or none)", s, strings.Join(KnownTPUChips, ", "))
	}
	return chips, false, nil
}

// tpuChipsArg is the harness's --tpu-chips value for opt.
func tpuChipsArg(opt Options) string {
	if opt.NoTPUCompile {
		return "none"
	}
	if len(opt.TPUChips) == 0 {
		return strings.Join(DefaultTPUChips, ",")
	}
	return strings.Join(opt.TPUChips, ",")
}

// TPUSummary renders the TPU compile gate's outcome, one line per chip in
// the order compiled ("" when the gate did not run).
func TPUSummary(v *Verdict) string {
	if len(v.TPU) == 0 {
		return ""
	}
	var b strings.Builder
	for _, c := range v.TPUChips() {
		r := v.TPU[c]
		if !r.Compiled {
			fmt.Fprintf(&b, "  tpu %-6s %-12s FAILED in %.2fs: %s\n", c, r.Topology, r.CompileS, r.Error)
			continue
		}
		fmt.Fprintf(&b, "  tpu %-6s %-12s compiled in %.2fs; %s accessed (min %s), HBM roofline %s\n",
			c, r.Topology, r.CompileS, fmtBytes(r.BytesAccessed), fmtBytes(r.MinBytes), fmtSeconds(r.RooflineS))
	}
	return b.String()
}

// TPUChips lists the chips of the verdict's TPU gate, known chips first in
// their table order, then any other in name order.
func (v *Verdict) TPUChips() []string {
	var out []string
	for _, c := range KnownTPUChips {
		if _, ok := v.TPU[c]; ok {
			out = append(out, c)
		}
	}
	var rest []string
	for c := range v.TPU {
		if !slices.Contains(KnownTPUChips, c) {
			rest = append(rest, c)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

func fmtBytes(b float64) string {
	switch {
	case b <= 0:
		return "?"
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

func fmtSeconds(s float64) string {
	switch {
	case s <= 0:
		return "?"
	case s < 1e-6:
		return fmt.Sprintf("%.0f ns", s*1e9)
	case s < 1e-3:
		return fmt.Sprintf("%.2f µs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.2f ms", s*1e3)
	}
	return fmt.Sprintf("%.2f s", s)
}
