package hazards_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/hazards"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
)

var update = flag.Bool("update", false, "rewrite the want files")

func TestGolden(t *testing.T) {
	ruletest.Golden(t, hazards.Rules, "testdata", *update, ruletest.Hazards)
}

func TestDocs(t *testing.T) { ruletest.Docs(t, hazards.Rules) }

func TestNotebook(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"counts cuda cells", `{"cells": [{"cell_type": "code", "source": ["x = x.cuda()\n"]},
			{"cell_type": "code", "source": "print(1)"}, {"cell_type": "markdown", "source": ["cuda"]}]}`, "(1 of 2 code cells mention CUDA)"},
		{"not json", "{not json", "could not be read"},
		{"empty", `{"cells": []}`, "(0 of 0 code cells"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := hazards.Notebook("nb.ipynb", []byte(c.src))
			if f.Code != "PDX011" || f.Line != 1 || !strings.Contains(f.Message, c.want) {
				t.Fatalf("Notebook() = %+v; want PDX011 at line 1 containing %q", f, c.want)
			}
		})
	}
}
