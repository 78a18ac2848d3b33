package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyCmd: a script whose output does not depend on the rewrite is
// the same (exit 0); one whose printed number the test rule changes is
// caught (exit 1) and the line is named; usage errors exit 2.
func TestVerifyCmd(t *testing.T) {
	py := os.Getenv("PALLASIFY_PYTHON")
	if py == "" {
		t.Skip("PALLASIFY_PYTHON not set")
	}
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "same.py"), []byte("d = \"cuda\"\nprint('loss', 0.25 * 3)\n"), 0o644)
	os.WriteFile(filepath.Join(root, "differs.py"), []byte("print('loss', len(\"cuda\") / 3)\n"), 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{root, "--", "python same.py"}, 0, "same behaviour: 1 output lines, 1 numbers (1 printed identically)"},
		{[]string{"--rtol", "0.5", root, "--", "python", "differs.py"}, 0, "within tolerance"},
		{[]string{root, "--", "python", "differs.py"}, 1, "line 1: number 1: original 1.3333333333333333, migrated 1.0"},
		{[]string{root, "python same.py"}, 2, ""},
		{[]string{"--ignore-lines", "(", root, "--", "true"}, 2, ""},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			io, out, errOut := testStreams()
			cmd := newVerifyCmd(io, testRules)
			cmd.SetArgs(append([]string{"--python", py, "--timeout", "2m"}, tc.args...))
			cmd.SetOut(out)
			cmd.SetErr(errOut)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.ExecuteContext(context.Background())
			if got := exitCode(err); got != tc.code {
				t.Fatalf("exit %d (%v); want %d\nout: %s\nerr: %s", got, err, tc.code, out, errOut)
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("output %q; want %q", out, tc.want)
			}
		})
	}
}
