package validators

import (
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/draft"
)

// TestFeedbackNonNumericCarriesOutput: a rejection that is not numeric
// carries the validator's output, its work directory taken out.
func TestFeedbackNonNumericCarriesOutput(t *testing.T) {
	v := &Verdict{Verdict: Rejected, Reason: "V-COMPILE: candidate does not trace",
		Output: "Traceback (most recent call last):\n  File \"/tmp/pallasify-validate-123abc/candidate.py\", line 9\nValueError: block shape (7, 100) is not divisible"}
	f := v.Feedback()
	if f.Kind != draft.KindVerdict || !strings.HasPrefix(f.Reason, "V-COMPILE") || !strings.Contains(f.Detail, "block shape (7, 100)") ||
		!strings.Contains(f.Detail, `File "candidate.py", line 9`) || strings.Contains(f.Detail, "pallasify-validate-") {
		t.Errorf("feedback %+v", f)
	}
	// A mismatch carries its first failing case and no output.
	m := &Verdict{Verdict: Rejected, Reason: "V-MISMATCH: 3 elements", Output: "noise",
		Cases: []Case{{Output: "y", Seed: 7, Distribution: "normal", Mismatches: 3, NaNMaskOK: true, FirstMismatches: [][]int{{0}}}}}
	mf := m.Feedback()
	if !strings.Contains(mf.Case, "seed 7") || !strings.Contains(mf.Case, "first mismatching indices [[0]]") || mf.Detail != "" {
		t.Errorf("mismatch feedback %+v", mf)
	}
}
