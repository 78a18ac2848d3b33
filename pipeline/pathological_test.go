package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Issue 32 item 6: small files the rules took quadratic (or worse) time
// over, with no cancellation inside the engine.
var pathological = map[string]string{
	// x = torch.a.a.a…a.cuda(): an attribute chain 200,000 deep.
	"chain.py": "import torch\nx = torch" + strings.Repeat(".a", 200_000) + ".cuda()\n",
	// One line of 100,000 `+ torch.zeros(3).cuda()`: a binary operator
	// nested 100,000 deep with 100,001 findings.
	"plus.py": "import torch\nx = torch.zeros(3).cuda()" + strings.Repeat(" + torch.zeros(3).cuda()", 100_000) + "\n",
}

// hangGuard is the deadline the pathological runs get: far beyond what
// they need; reaching it means the run hung (or ignored its context).
const hangGuard = 3 * time.Minute

// TestPathologicalFilesFinish: analyze and migrate each of the issue's
// files, at the sizes, with the default rules and limits. Each
// finishes, its file either rewritten into output that parses or skipped
// with a code. Before: neither finished in 12 minutes, nor stopped when
// its context was cancelled.
func TestPathologicalFilesFinish(t *testing.T) {
	for name, src := range pathological {
		for _, mode := range []string{"analyze", "migrate"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				root := writeTree(t, map[string]string{name: src})
				ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
				defer cancel()
				run := Analyze
				if mode == "migrate" {
					run = Migrate
				}
				r, err := run(ctx, Options{Root: root, Concurrency: 1})
				if ctx.Err() != nil {
					t.Fatalf("%s of %s hit the %v hang guard (err %v)", mode, name, hangGuard, err)
				}
				if err != nil {
					t.Fatal(err)
				}
				f := fileNamed(t, r, name)
				if f.Skipped != "" {
					if !hasCode(f, f.Skipped) {
						t.Fatalf("skipped as %s without a diagnostic of that code: %+v", f.Skipped, f.Diagnostics)
					}
					t.Logf("%s: skipped %s: %s", name, f.Skipped, diagMessage(f, f.Skipped))
					return
				}
				if mode == "migrate" {
					if f.Updated == nil {
						t.Fatalf("%s neither skipped nor rewritten: %+v", name, f.Diagnostics[:min(3, len(f.Diagnostics))])
					}
					parsesClean(t, f.Updated)
				}
			})
		}
	}
}

// TestPathologicalFilesUnlimited: with the depth and size limits off, the
// rules themselves get through the files (and 100,000 lines of
// .cuda() calls) in time linear in their size, and rewrite them into
// output that parses: the limits are a second line of defence, not what
// keeps these files from hanging. Before: a dotted-name recursion
// building each prefix (n² bytes), an overlap test against every accepted
// edit, a newline count from the file's start per finding, and one
// tree-sitter edit per change walking the 100,000-deep tree.
func TestPathologicalFilesUnlimited(t *testing.T) {
	files := map[string]string{"lines.py": "import torch\n" + strings.Repeat("x = torch.zeros(3).cuda()\n", 100_000)}
	for name, src := range pathological {
		files[name] = src
	}
	for name, src := range files {
		t.Run(name, func(t *testing.T) {
			root := writeTree(t, map[string]string{name: src})
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			r, err := Migrate(ctx, Options{Root: root, Concurrency: 1, Limits: rule.Limits{MaxDepth: -1, MaxNodes: -1}})
			if ctx.Err() != nil {
				t.Fatalf("migrate of %s hit the %v hang guard (err %v)", name, hangGuard, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			f := fileNamed(t, r, name)
			if f.Skipped != "" {
				t.Fatalf("%s skipped: %+v", name, f.Diagnostics)
			}
			if name == "chain.py" {
				// As for torch.a.a.a.cuda(): a module path, not a tensor;
				// no rule reports it.
				if f.Updated != nil || len(f.Diagnostics) > 0 {
					t.Fatalf("chain.py changed or reported: %+v", f.Diagnostics[:min(3, len(f.Diagnostics))])
				}
				return
			}
			if f.Updated == nil {
				t.Fatalf("%s not rewritten: %+v", name, f.Diagnostics[:min(3, len(f.Diagnostics))])
			}
			parsesClean(t, f.Updated)
			if n := strings.Count(string(f.Updated), ".cuda()"); n != 0 {
				t.Errorf("%d .cuda() calls left in the rewrite", n)
			}
		})
	}
}

func fileNamed(t *testing.T, r *Run, name string) *File {
	t.Helper()
	for _, f := range r.Files {
		if f.Path == name {
			return f
		}
	}
	t.Fatalf("%s not in the run", name)
	return nil
}

func hasCode(f *File, code string) bool { return diagMessage(f, code) != "" }

func diagMessage(f *File, code string) string {
	for _, d := range f.Diagnostics {
		if d.Code == code {
			return d.Message
		}
	}
	return ""
}

func parsesClean(t *testing.T, src []byte) {
	t.Helper()
	p := ts.NewParser(ts.Python)
	defer p.Close()
	tree, err := p.Parse(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	if n := tree.ErrorCount(); n > 0 {
		t.Fatalf("output has %d syntax errors", n)
	}
}

// cancelGrace is how long a cancelled run may take to return: generous,
// a guard on the cancellation path rather than a claim about speed.
const cancelGrace = 10 * time.Second

// TestMigrateCancelledPromptly: a run over files that take the rules a while
// returns within cancelGrace of its context's cancellation, from inside a
// file's rules, with context.Canceled. Before: the engine looked at its
// context only in the parser, so a cancelled run finished every file in
// flight first (minutes each for these files).
func TestMigrateCancelledPromptly(t *testing.T) {
	root := t.TempDir()
	slowTree(t, root, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Migrate(ctx, Options{Root: root, Concurrency: 2})
		done <- err
	}()
	time.Sleep(3 * time.Second) // the files are read and parsed; the rules run
	cancel()
	cancelled := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled run returned %v, want context.Canceled", err)
		}
		t.Logf("returned %v after the cancel", time.Since(cancelled).Round(time.Millisecond))
	case <-time.After(cancelGrace):
		t.Fatalf("cancelled run still running %v after the cancel", cancelGrace)
	}
}

// slowTree writes n copies of a file that takes the rules a while (100,000
// lines of .cuda() calls, each a finding with a fix) under root.
func slowTree(t *testing.T, root string, n int) []string {
	t.Helper()
	body := "import torch\n" + strings.Repeat("x = torch.zeros(3).cuda()\n", 100_000)
	var out []string
	for i := range n {
		p := filepath.Join(root, "m"+string(rune('a'+i))+".py")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}
