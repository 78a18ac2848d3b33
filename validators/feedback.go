package validators

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/pallasify/pallasify/transforms/draft"
)

// Feedback turns a rejection into the next turn's facts for a drafter that
// repairs (the LLM): the reason, the first failing case (shape, seed,
// distribution, errors, first mismatching indices), the statistics and, for
// errors that are not numeric, the tail of the validator's output (trace or
// compile errors) with the per-run work directories taken out.
func (v *Verdict) Feedback() *draft.Feedback {
	f := &draft.Feedback{Kind: draft.KindVerdict, Reason: v.Reason}
	for _, c := range v.Cases {
		if c.Mismatches == 0 && c.NaNMaskOK {
			continue
		}
		sizes, _ := json.Marshal(c.Sizes)
		f.Case = fmt.Sprintf("output %s, sizes %s, seed %d, %s inputs: %d mismatches, max abs %.3g, max rel %.3g, ULP max %.0f, NaN/Inf mask ok %v",
			c.Output, sizes, c.Seed, c.Distribution, c.Mismatches, c.MaxAbs, c.MaxRel, c.ULPMax, c.NaNMaskOK)
		if len(c.FirstMismatches) > 0 {
			idx, _ := json.Marshal(c.FirstMismatches)
			f.Case += ", first mismatching indices " + string(idx)
		}
		break
	}
	if v.Stats.Cases > 0 {
		f.Stats = fmt.Sprintf("%d cases: max abs %.3g, max rel %.3g, ULP p50 %.0f p99 %.0f max %.0f, %d mismatches",
			v.Stats.Cases, v.Stats.MaxAbs, v.Stats.MaxRel, v.Stats.ULPP50, v.Stats.ULPP99, v.Stats.ULPMax, v.Stats.Mismatches)
	}
	switch v.Code() {
	case "V-MISMATCH", "V-NAN":
	default:
		f.Detail = scrubPaths(lastLines(v.Output, 30, 2500))
	}
	return f
}

func lastLines(s string, n, maxBytes int) string {
	s = strings.TrimSpace(s)
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s = strings.Join(lines, "\n")
	if len(s) > maxBytes {
		s = s[len(s)-maxBytes:]
	}
	return s
}

// workPathRE matches the validator's per-run work directories, which would
// make otherwise identical feedback (and so an LLM reply cache key) differ.
var workPathRE = regexp.MustCompile(`(?:/[\w.-]+)*/pallasify-[\w]+-[\w]+/`)

func scrubPaths(s string) string { return workPathRE.ReplaceAllString(s, "") }
