package rule

import (
	"bytes"
	"testing"
)

// TestAlreadyMarkedStackedMarks: a statement with several marks above it is
// recognised as marked for each code, not only the nearest one (a second
// --mark pass re-added the farther marks: FuzzEngine seed #110).
func TestAlreadyMarkedStackedMarks(t *testing.T) {
	src := []byte("x = 1\n    # pallasify: PDV003 a\n    # pallasify: PCU001 b\n    y = x\n")
	ls := bytes.Index(src, []byte("    y = x"))
	for _, code := range []string{"PDV003", "PCU001"} {
		if !alreadyMarked(src, ls, code) {
			t.Errorf("%s not found above the statement", code)
		}
	}
	if alreadyMarked(src, ls, "PDX001") {
		t.Error("PDX001 found")
	}
	if alreadyMarked(src, bytes.Index(src, []byte("x = 1")), "PDV003") {
		t.Error("a mark below counted")
	}
}
