package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/transforms"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// verifyStack returns the venv interpreter with torch, failing under
// PALLASIFY_REQUIRE_STACK=1 and skipping otherwise when it is missing.
func verifyStack(t *testing.T) string {
	t.Helper()
	py := python(t)
	if out, err := (&sandbox.Sandbox{Disabled: true}).Run(context.Background(), t.TempDir(), sandbox.Limits{Wall: time.Minute}, py, "-c", "import torch"); err != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
			t.Fatalf("torch does not import (PALLASIFY_REQUIRE_STACK=1): %v\n%s", err, out)
		}
		t.Skipf("torch does not import: %v", err)
	}
	return py
}

// migrateOut migrates root with rules into a fresh --out directory.
func migrateOut(t *testing.T, root string, rules []*rule.Rule) string {
	t.Helper()
	run, err := Migrate(context.Background(), Options{Root: root, Target: rule.Portable, Rules: rules, Exclude: fixtureExclude})
	if err != nil {
		t.Fatal(err)
	}
	if len(run.ChangedFiles()) == 0 {
		t.Fatal("the migration changed nothing: nothing to verify")
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := WriteTree(context.Background(), run, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// lrRule is a deliberately breaking rewrite, registered only here: it
// doubles every `lr=0.1`.
var lrRule = &rule.Rule{
	Code: "PTT090", Name: "test-break-lr", Doc: "Test-only breaking rewrite.", Safety: rule.Safe, Needles: []string{"lr="},
	Run: func(p *rule.Pass) {
		ts.Walk(p.Tree.Root(), func(n *ts.Node) bool {
			if n.Type() == "keyword_argument" && strings.ReplaceAll(p.Text(n), " ", "") == "lr=0.1" {
				p.Report(rule.Finding{Start: int(n.StartByte()), End: int(n.EndByte()), Message: "break it",
					Fix: &rule.Fix{Title: "break it", Edits: []rule.Edit{{Start: int(n.StartByte()), End: int(n.EndByte()), New: "lr=0.2"}}}})
			}
			return true
		})
	},
}

// TestVerifyTrainingScript: the fixture training script prints the same
// losses and weights (bit-identical as printed) before and after the real
// rules; a breaking test-only rule is caught.
func TestVerifyTrainingScript(t *testing.T) {
	if testing.Short() {
		t.Skip("runs torch (-short)")
	}
	py := verifyStack(t)
	root := filepath.Join("..", "fixtures", "projects", "verify_train")
	opts := VerifyOptions{Original: root, Command: []string{"python train.py"}, Python: py, Timeout: 3 * time.Minute}

	opts.Migrated = migrateOut(t, root, transforms.All())
	res, err := Verify(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Same() || res.Numbers < 11 || res.Identical != res.Numbers || res.Original.ExitCode != 0 {
		t.Fatalf("real rules: %s\noriginal:\n%s%s\nmigrated:\n%s%s", res.Summary(), res.Original.Stdout, res.Original.Stderr,
			res.Migrated.Stdout, res.Migrated.Stderr)
	}
	t.Logf("real rules: %s", res.Summary())

	opts.Baseline = &res.Original
	opts.Migrated = migrateOut(t, root, append(transforms.All(), lrRule))
	res, err = Verify(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Same() {
		t.Fatalf("the breaking rewrite was not caught: %s", res.Summary())
	}
	if !strings.Contains(strings.Join(res.Differences, "\n"), "line 2: number 2") {
		t.Errorf("differences do not name the second step's loss: %v", res.Differences)
	}
	t.Logf("breaking rule: %s", res.Summary())
}

func TestCompareRuns(t *testing.T) {
	for _, tc := range []struct {
		name       string
		a, b       string
		rtol, atol float64
		ignore     string
		same       bool
	}{
		{"identical", "step 0 loss 1.25\nok\n", "step 0 loss 1.25\nok\n", 0, 0, "", true},
		{"bit difference", "loss 1.2500001\n", "loss 1.2500002\n", 0, 0, "", false},
		{"within rtol", "loss 1.2500001\n", "loss 1.2500002\n", 1e-6, 0, "", true},
		{"within atol", "loss 1e-9\n", "loss 2e-9\n", 0, 1e-8, "", true},
		{"text differs", "device cpu\n", "device tpu\n", 1, 1, "", false},
		{"extra line", "a\n", "a\nb\n", 0, 0, "", false},
		{"ignored line", "took 1.5s\nloss 2\n", "took 3.1s\nloss 2\n", 0, 0, `^took `, true},
		{"nan", "loss nan\n", "loss nan\n", 0, 0, "", true},
		{"from zero", "loss 0.0000\n", "loss 0.5\n", 0, 0, "", false},
		{"to nan", "loss 1.5\n", "loss nan\n", 0, 0, "", false},
		{"to inf", "loss 1.5\n", "loss inf\n", 0, 0, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := VerifyOptions{RTol: tc.rtol, ATol: tc.atol}
			if tc.ignore != "" {
				o.IgnoreLines = []*regexp.Regexp{regexp.MustCompile(tc.ignore)}
			}
			res := &VerifyResult{Original: VerifyRun{Stdout: tc.a}, Migrated: VerifyRun{Stdout: tc.b}}
			compareRuns(res, o)
			if res.Same() != tc.same {
				t.Errorf("same = %v; want %v (%v)", res.Same(), tc.same, res.Differences)
			}
			// verify --format json encodes every comparison (a difference
			// from 0 made MaxRel +Inf, which encoding/json refuses: exit 2).
			if _, err := json.Marshal(res); err != nil {
				t.Errorf("json: %v", err)
			}
		})
	}
	res := &VerifyResult{Original: VerifyRun{ExitCode: 0}, Migrated: VerifyRun{ExitCode: 1}}
	compareRuns(res, VerifyOptions{})
	if res.Same() {
		t.Error("different exit codes compared the same")
	}
}
