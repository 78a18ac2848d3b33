package transforms_test

import (
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/pallasify/pallasify/transforms"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// fuzzing reports whether the test binary runs with -test.fuzz.
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// fuzzSeeds returns the Python inputs the rules are tested with: the fixture
// projects, each rule's documented example and — when fuzzing; a plain go
// test leaves them to the rule families' own golden tests — every .py under
// a testdata directory of transforms/.
func fuzzSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	add := func(root string, onlyTestdata bool) {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".py") {
				return nil
			}
			if onlyTestdata && !strings.Contains(filepath.ToSlash(p), "/testdata/") {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil && len(b) <= 1<<16 {
				seeds = append(seeds, b)
			}
			return nil
		})
	}
	if fuzzing() {
		add(".", true)
	}
	add(filepath.Join("..", "fixtures", "projects"), false)
	for _, r := range transforms.All() {
		if r.Example.Before != "" {
			seeds = append(seeds, []byte(r.Example.Before))
		}
	}
	if len(seeds) == 0 {
		t.Fatal("no fuzz seeds found")
	}
	return seeds
}

// FuzzEngine runs the full rule set, for both targets, with and without
// unsafe fixes and markers, and as a library module. Input that parses must yield output that parses,
// and a second pass over the output must change nothing.
func FuzzEngine(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	rules := transforms.All()
	byName := map[string]*rule.Rule{}
	for _, r := range rules {
		byName[r.Name] = r
	}
	var configs []rule.Options
	for _, tg := range rule.Targets {
		configs = append(configs, rule.Options{Target: tg}, rule.Options{Target: tg, UnsafeFixes: true, Mark: true})
	}
	// A library module of a walked tree (kit.Library): in no package, the
	// lazy device helpers inline; in a package, imported from its helper
	// module.
	configs = append(configs,
		rule.Options{Target: rule.Portable, UnsafeFixes: true, Mark: true, Layout: rule.Layout{Tree: true}},
		rule.Options{Target: rule.Portable, Layout: rule.Layout{Tree: true, Package: "."}},
		// the pipeline's: marks wrapped at the repository's line limit
		rule.Options{Target: rule.TPU, Mark: true, LineLength: rule.DefaultLineLength})
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 || !utf8.Valid(src) {
			return
		}
		ctx := context.Background()
		p := ts.NewParser(ts.Python)
		defer p.Close()
		tree, err := p.Parse(ctx, src)
		if err != nil {
			return
		}
		bad := tree.ErrorCount()
		tree.Close()
		if bad > 0 {
			return
		}
		for _, o := range configs {
			eng := &rule.Engine{Rules: rules, Opts: o}
			res, err := eng.Run(ctx, p, "fuzz.py", src)
			if err != nil {
				t.Fatalf("%+v: engine: %v", o, err)
			}
			for _, pr := range res.Problems {
				t.Logf("%+v: %s %s", o, pr.Code, pr.Message)
			}
			for _, f := range res.Findings {
				// The driver's prefilter skips a rule on a file its needles
				// rule out: they must hold wherever the rule reports.
				if r := byName[f.Rule]; r != nil && !r.MayReport(src) {
					t.Fatalf("%+v: %s reports on an input its needles %q rule out:\n%s", o, r.Code, r.Needles, src)
				}
			}
			if res.Output == nil {
				continue
			}
			out, err := p.Parse(ctx, res.Output)
			if err != nil {
				t.Fatal(err)
			}
			n := out.ErrorCount()
			out.Close()
			if n > 0 {
				t.Fatalf("%+v: input parses, output has %d syntax errors:\n%s", o, n, udiff.Unified("in", "out", string(src), string(res.Output)))
			}
			res2, err := eng.Run(ctx, p, "fuzz.py", res.Output)
			if err != nil {
				t.Fatal(err)
			}
			if res2.Output != nil {
				t.Fatalf("%+v: second pass changed the output:\n%s", o, udiff.Unified("pass1", "pass2", string(res.Output), string(res2.Output)))
			}
		}
	})
}
