package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/transforms"
	"github.com/pallasify/pallasify/transforms/codes"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// reportingCommands are the commands that report, with arguments that get
// them past their argument checks, and whether they keep the deprecated
// --json.
var reportingCommands = []struct {
	args    []string
	formats string // the allowed values, as the messages list them
	alias   bool
	help    string // the values --help lists, when not formats (verify --imports shares verify's flags)
}{
	{[]string{"analyze", "."}, "text, json, markdown, sarif or html", false, ""},
	{[]string{"migrate", "."}, "text, json, markdown, sarif or html", false, ""},
	{[]string{"verify", ".", "--", "true"}, "text, json or html", true, ""},
	{[]string{"verify", "--imports", "."}, "text or json", true, "text, json or html"},
	{[]string{"ops", ".", "--", "true"}, "text, json or html", false, ""},
	{[]string{"doctor"}, "text or json", true, ""},
	{[]string{"batch", "repos.txt"}, "text or json", true, ""},
	{[]string{"batch", "status"}, "text or json", true, ""},
	{[]string{"validate", "--candidate", "c.py", "--kernel-spec", "s.json"}, "text or json", true, ""},
	{[]string{"rules"}, "text or json", false, ""},
	{[]string{"rules", "PDV001"}, "text or json", false, ""},
}

// withFlags puts flags before a "--" in args (after it they would be the
// command's).
func withFlags(args []string, flags ...string) []string {
	out := append([]string{}, args[:1]...)
	out = append(out, flags...)
	return append(out, args[1:]...)
}

// TestFormatFlagOnEveryCommand: every reporting command documents --format
// (not the hidden --json), and rejects an unknown format with exit 2 and a
// message naming the allowed values, before doing any work.
func TestFormatFlagOnEveryCommand(t *testing.T) {
	for _, c := range reportingCommands {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			cmdPath := c.args[:1]
			if c.args[0] == "batch" && c.args[1] == "status" {
				cmdPath = c.args[:2]
			}
			io, out, _ := testStreams()
			if code := run(append(append([]string{}, cmdPath...), "--help"), io); code != 0 {
				t.Fatalf("--help: exit %d", code)
			}
			help := c.help
			if help == "" {
				help = c.formats
			}
			if !strings.Contains(out.String(), "--format string") || !strings.Contains(out.String(), help) {
				t.Errorf("--help does not document --format %s:\n%s", help, out)
			}
			if strings.Contains(out.String(), "--json") {
				t.Errorf("--help shows the deprecated --json:\n%s", out)
			}
			io, out, errOut := testStreams()
			code := run(withFlags(c.args, "--format", "xml"), io)
			want := `unknown --format "xml" (want ` + c.formats + ")"
			if code != 2 || !strings.Contains(errOut.String(), want) || out.Len() != 0 {
				t.Errorf("--format xml: exit %d, stderr %q, stdout %q; want 2 and %q", code, errOut, out, want)
			}
			io, _, errOut = testStreams()
			code = run(withFlags(c.args, "--json", "--format", "sarif"), io)
			if c.alias {
				if code != 2 || !strings.Contains(errOut.String(), "--json means --format json") {
					t.Errorf("--json --format sarif: exit %d, %s", code, errOut)
				}
			} else if code != 2 || !strings.Contains(errOut.String(), "unknown flag: --json") {
				t.Errorf("--json on a command that never had it: exit %d, %s", code, errOut)
			}
		})
	}
}

// TestJSONAliasKeepsWorking: the deprecated --json still prints the JSON
// document (with a note on stderr).
func TestJSONAliasKeepsWorking(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "repos.txt")
	if err := os.WriteFile(list, []byte("file://"+filepath.Join(dir, "missing.git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flags := range [][]string{{"--json"}, {"--format", "json"}} {
		io, out, errOut := testStreams()
		cmd := newBatchCmd(io)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		cmd.SetArgs(append(append([]string{}, flags...), "--run-dir", filepath.Join(dir, strings.Join(flags, "")), list))
		cmd.SetOut(io.Out)
		cmd.SetErr(io.ErrOut)
		err := cmd.Execute()
		if exitCode(err) != 1 {
			t.Fatalf("%v: exit %d (%v), want 1 (the repository fails)\n%s", flags, exitCode(err), err, errOut)
		}
		var doc struct {
			SchemaVersion *int              `json:"schema_version"`
			Repos         []json.RawMessage `json:"repos"`
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.SchemaVersion == nil || *doc.SchemaVersion != schemaBatch || len(doc.Repos) != 1 {
			t.Errorf("%v: not the versioned summary (%v):\n%s", flags, err, out)
		}
		if deprecated := strings.Contains(errOut.String(), "--json is deprecated"); deprecated != (flags[0] == "--json") {
			t.Errorf("%v: deprecation note %v:\n%s", flags, deprecated, errOut)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{struct{}{}, "{\n  \"schema_version\": 3\n}\n"},
		{map[string]int{"a": 1}, "{\n  \"schema_version\": 3,\n  \"a\": 1\n}\n"},
		{map[string]string{"a": "<b>"}, "{\n  \"schema_version\": 3,\n  \"a\": \"<b>\"\n}\n"},
	} {
		var b bytes.Buffer
		if err := writeJSON(&b, 3, c.v); err != nil || b.String() != c.want {
			t.Errorf("writeJSON(%v) = %q, %v; want %q", c.v, b.String(), err, c.want)
		}
	}
	if err := writeJSON(&bytes.Buffer{}, 1, []int{1}); err == nil {
		t.Error("an array got a schema_version")
	}
}

// TestRulesJSON: rules --format json lists every code with its fields;
// rules CODE --format json prints one.
func TestRulesJSON(t *testing.T) {
	io, out, errOut := testStreams()
	if code := run([]string{"rules", "--format", "json"}, io); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list struct {
		SchemaVersion int       `json:"schema_version"`
		Codes         []codeDoc `json:"codes"`
	}
	if err := json.Unmarshal(out.Bytes(), &list); err != nil || list.SchemaVersion != schemaRules {
		t.Fatalf("%v, schema_version %d:\n%.500s", err, list.SchemaVersion, out)
	}
	got := map[string]codeDoc{}
	for _, c := range list.Codes {
		got[c.Code] = c
		if c.Name == "" || c.Title == "" || c.Doc == "" || c.Group == "" || c.Severity == "" || c.Family == "" {
			t.Errorf("%s lacks a field: %+v", c.Code, c)
		}
	}
	for _, r := range transforms.All() {
		if c, ok := got[r.Code]; !ok || !c.Rule || c.Safety != r.Safety.String() || c.Removed != r.Removed {
			t.Errorf("rule %s: %+v", r.Code, c)
		}
	}
	for _, e := range codes.All() {
		if _, ok := got[e.Code.Code]; !ok {
			t.Errorf("code %s missing", e.Code.Code)
		}
	}
	if len(got) != len(list.Codes) {
		t.Errorf("%d codes, %d distinct", len(list.Codes), len(got))
	}

	io, out, errOut = testStreams()
	if code := run([]string{"rules", "PDV001", "--format", "json"}, io); code != 0 {
		t.Fatalf("PDV001: exit %d: %s", code, errOut)
	}
	var one struct {
		SchemaVersion int `json:"schema_version"`
		codeDoc
	}
	if err := json.Unmarshal(out.Bytes(), &one); err != nil || one.SchemaVersion != schemaRules || one.Code != "PDV001" || !one.Rule ||
		one.Example == nil || one.Example.Before == "" {
		t.Errorf("rules PDV001 --format json (%v):\n%s", err, out)
	}
	io, out, _ = testStreams()
	if code := run([]string{"rules", "v-mismatch", "--format", "json"}, io); code != 0 || !strings.Contains(out.String(), `"code": "V-MISMATCH"`) {
		t.Errorf("V-MISMATCH: exit %d:\n%s", code, out)
	}
	io, _, errOut = testStreams()
	if code := run([]string{"rules", "PZZ999", "--format", "json"}, io); code != 2 || !strings.Contains(errOut.String(), "no diagnostic code") {
		t.Errorf("unknown code: exit %d %s", code, errOut)
	}
}

// humanRule reports every call of Event() with no fix: a site left for a
// human.
var humanRule = &rule.Rule{
	Code: "PTT003", Name: "test-human", Doc: "Time without CUDA events\n\nLonger doc.", Safety: rule.DisplayOnly, Needles: []string{"Event"},
	Run: func(p *rule.Pass) {
		ts.Walk(p.Tree.Root(), func(n *ts.Node) bool {
			if n.Type() == "call" && strings.HasPrefix(p.Text(n), "Event(") {
				p.Report(rule.Finding{Start: int(n.StartByte()), End: int(n.EndByte()), Message: "CUDA event"})
			}
			return true
		})
	},
}

// runTree runs analyze or migrate with testRule and humanRule over a tree
// holding one file with src.
func runTree(t *testing.T, src string, args ...string) (int, string, string) {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "t.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	rules := []*rule.Rule{testRule, humanRule}
	io, out, errOut := testStreams()
	var cmd *cobra.Command
	if args[0] == "analyze" {
		cmd = newAnalyzeCmd(io, func(ctx context.Context, o *analyzeOptions) error {
			o.Rules = rules
			return analyzeRun(ctx, o)
		})
	} else {
		cmd = newMigrateCmd(io, func(ctx context.Context, o *migrateOptions) error {
			o.Rules, o.Getenv = rules, func(string) string { return "" }
			return migrateRun(ctx, o)
		})
	}
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetOut(io.Out)
	cmd.SetErr(io.ErrOut)
	flags := []string{"--no-sandbox"}
	if args[0] == "migrate" {
		flags = []string{"--color", "never"}
	}
	cmd.SetArgs(append(append(append([]string{}, args[1:]...), flags...), root))
	err := cmd.Execute()
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return exitCode(err), out.String(), errOut.String()
}

// TestCheckAndFindingsExitCodes: --check exits 1 when files would change;
// --exit-nonzero-on-findings exits 1 while sites are left for a human, even
// when no file would change; neither otherwise.
func TestCheckAndFindingsExitCodes(t *testing.T) {
	const (
		human   = "import torch\nt = Event()\n"  // no file would change; one site left for a human
		fixable = "import torch\nx = \"cuda\"\n" // a file would change; nothing left for a human
		clean   = "import torch\n"
	)
	cases := []struct {
		name, src string
		args      []string
		want      int
	}{
		{"check: a site left for a human, nothing to change", human, []string{"migrate", "--check"}, 0},
		{"findings: a site left for a human, nothing to change", human, []string{"migrate", "--exit-nonzero-on-findings"}, 1},
		{"check and findings: a site left for a human", human, []string{"migrate", "--check", "--exit-nonzero-on-findings"}, 1},
		{"check: a file would change", fixable, []string{"migrate", "--check"}, 1},
		{"findings: all fixed", fixable, []string{"migrate", "--exit-nonzero-on-findings"}, 0},
		{"check and findings: clean", clean, []string{"migrate", "--check", "--exit-nonzero-on-findings"}, 0},
		{"analyze: a site left for a human", human, []string{"analyze"}, 0},
		{"analyze findings: a site left for a human", human, []string{"analyze", "--exit-nonzero-on-findings", "--format", "json"}, 1},
		{"analyze findings: all fixable", fixable, []string{"analyze", "--exit-nonzero-on-findings"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runTree(t, c.src, c.args...)
			if code != c.want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.want, out, errOut)
			}
			if code == 1 && strings.Contains(strings.Join(c.args, " "), "findings") && !strings.Contains(errOut, "1 site(s) left for a human") {
				t.Errorf("exit 1 without saying why:\n%s", errOut)
			}
			if strings.Contains(strings.Join(c.args, " "), "json") {
				var doc struct {
					SchemaVersion int `json:"schema_version"`
					Manual        int `json:"manual"`
				}
				if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.SchemaVersion != 1 || doc.Manual != 1 {
					t.Errorf("json report (%v): %+v\n%s", err, doc, out)
				}
			}
		})
	}
}

// TestPyprojectConfigInRuns: analyze and migrate read [tool.pallasify] from
// the closest pyproject.toml up to the repository's root, say so in the
// text report, and stop on its errors with their line.
func TestPyprojectConfigInRuns(t *testing.T) {
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(repo, "src", "pkg")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "run.py"), []byte("x = \"cuda\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pyproject := filepath.Join(repo, config.PyprojectName)
	if err := os.WriteFile(pyproject, []byte("[project]\nname = \"demo\"\n\n[tool.pallasify]\ntarget = \"tpu\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmdName := range []string{"analyze", "migrate"} {
		io, out, errOut := testStreams()
		var cmd *cobra.Command
		if cmdName == "analyze" {
			cmd = newAnalyzeCmd(io, func(ctx context.Context, o *analyzeOptions) error {
				o.Rules = []*rule.Rule{targetRule}
				return analyzeRun(ctx, o)
			})
		} else {
			cmd = newMigrateCmd(io, func(ctx context.Context, o *migrateOptions) error {
				o.Rules, o.Getenv = []*rule.Rule{targetRule}, func(string) string { return "" }
				return migrateRun(ctx, o)
			})
		}
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		cmd.SetOut(io.Out)
		cmd.SetErr(io.ErrOut)
		cmd.SetArgs([]string{pkg})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%s: %v\n%s", cmdName, err, errOut)
		}
		if !strings.Contains(out.String(), "(target tpu)") || !strings.Contains(out.String(), "  config    "+pyproject+" [tool.pallasify]\n") {
			t.Errorf("%s: the report does not show the target and file of pyproject.toml:\n%s", cmdName, out)
		}
	}
	if err := os.WriteFile(pyproject, []byte("[tool.pallasify]\ntarget = \"tpu\"\ntargte = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	io, _, errOut := testStreams()
	if code := run([]string{"analyze", pkg}, io); code != 2 || !strings.Contains(errOut.String(), "pyproject.toml:3: error") || !strings.Contains(errOut.String(), "targte") {
		t.Errorf("unknown key: exit %d:\n%s", code, errOut)
	}
}
