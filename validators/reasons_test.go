package validators

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReasonCodesDocumented: every reason code the harness or the Go side
// writes has a doc in ReasonCodes, and every documented code is written
// somewhere.
func TestReasonCodesDocumented(t *testing.T) {
	re := regexp.MustCompile(`["'](V-[A-Z][A-Z-]*[A-Z])\b`)
	emitted := map[string]string{}
	scan := func(name string, data []byte) {
		for _, m := range re.FindAllSubmatch(data, -1) {
			emitted[string(m[1])] = name
		}
	}
	err := fs.WalkDir(harnessFS, "harness", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".py") {
			b, _ := harnessFS.ReadFile(p)
			scan(p, b)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	gos, _ := filepath.Glob("*.go")
	for _, g := range gos {
		if strings.HasSuffix(g, "_test.go") || g == "reasons.go" {
			continue
		}
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		scan(g, b)
	}
	for code, where := range emitted {
		if _, ok := ReasonCode(code); !ok {
			t.Errorf("%s (written in %s) has no entry in ReasonCodes", code, where)
		}
	}
	for _, c := range ReasonCodes() {
		if _, ok := emitted[c.Code]; !ok {
			t.Errorf("%s is documented but nothing writes it", c.Code)
		}
		if c.Name == "" || c.Title == "" || c.Doc == "" || c.Severity == "" {
			t.Errorf("%s: incomplete doc %+v", c.Code, c)
		}
	}
	if len(emitted) < 15 {
		t.Errorf("found only %d codes in the sources: the scan is broken", len(emitted))
	}
}
