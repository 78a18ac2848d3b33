package batch

import (
	"bytes"
	"strings"
	"testing"
)

func TestBarsAndMarkdown(t *testing.T) {
	var out bytes.Buffer
	b := NewBars(&out)
	tr := b.Start("acme__train")
	for _, s := range []string{"clone", "migrate", "deliver"} {
		tr.Stage(s)
	}
	tr.Finish(StateDone)
	b.Start("acme__other").Finish(StateFailed)
	b.Wait()

	var md bytes.Buffer
	WriteMarkdown(&md, &Summary{Repos: []Status{{Source: "a|b", State: StateFailed, Error: "line one\nline two"}}, Failed: 1})
	if !strings.Contains(md.String(), "| 1 | `a\\|b` | failed |") || strings.Contains(md.String(), "line two") {
		t.Errorf("markdown:\n%s", md.String())
	}
}
