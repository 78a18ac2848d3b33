package transforms_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aymanbagabas/go-udiff"
	"github.com/pallasify/pallasify/transforms"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Every family's golden input, migrated at the line limits repositories use
// (flake8's 79, black's 88, ours 100), both targets, with and without marks:
// a second pass over the output changes nothing, however the line printer
// spread a fix over lines.
func TestSecondPassAtLineLimits(t *testing.T) {
	files, err := filepath.Glob("*/testdata/*/input.py")
	if err != nil || len(files) < 50 {
		t.Fatalf("%d golden inputs (%v)", len(files), err)
	}
	ctx := context.Background()
	p := ts.NewParser(ts.Python)
	defer p.Close()
	for _, fn := range files {
		src, err := os.ReadFile(fn)
		if err != nil {
			t.Fatal(err)
		}
		for _, ll := range []int{79, 88, 100} {
			for _, tg := range rule.Targets {
				for _, mark := range []bool{false, true} {
					eng := &rule.Engine{Rules: transforms.All(), Opts: rule.Options{Target: tg, UnsafeFixes: true, Mark: mark, LineLength: ll}}
					res, err := eng.Run(ctx, p, "x.py", src)
					if err != nil {
						t.Fatalf("%s: %v", fn, err)
					}
					if res.Output == nil {
						continue
					}
					res2, err := eng.Run(ctx, p, "x.py", res.Output)
					if err != nil {
						t.Fatalf("%s: second pass: %v", fn, err)
					}
					if res2.Output != nil {
						t.Errorf("%s ll=%d %s mark=%v:\n%s", fn, ll, tg, mark, udiff.Unified("1", "2", string(res.Output), string(res2.Output)))
					}
				}
			}
		}
	}
}
