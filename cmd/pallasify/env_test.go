package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notEnvVars are PALLASIFY_* names in the source that are not environment
// variables, with why.
var notEnvVars = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`^PALLASIFY_DEVICE(_[0-9]*)?$`), "a Python name the device rewrites bind (DEVICE's fallbacks)"},
	{regexp.MustCompile(`^PALLASIFY_KERNEL$`), "the header dict of a wired Pallas module"},
	{regexp.MustCompile(`^PALLASIFY_LLM_$`), "PALLASIFY_LLM_* in a message"},
	{regexp.MustCompile(`^PALLASIFY_[A-Z0-9_]+_H$`), "a C/C++ header's include guard"},
}

// sourceExts are the files scanned for variable names.
var sourceExts = map[string]bool{".go": true, ".py": true, ".c": true, ".cc": true, ".cpp": true, ".h": true, ".cu": true, ".cuh": true, ".sh": true}

// TestEnvironmentListsEveryVariable scans the tree's code (Go, Python, C,
// C++, CUDA, shell, the Makefile; hidden directories and the venv left out)
// for PALLASIFY_* names: each must be in envVars (pallasify help
// environment), and each of envVars must be read somewhere.
func TestEnvironmentListsEveryVariable(t *testing.T) {
	root := filepath.Join("..", "..")
	nameRE := regexp.MustCompile(`PALLASIFY_[A-Z0-9_]+`)
	found := map[string]string{} // name -> the first file naming it
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !(sourceExts[filepath.Ext(path)] || d.Name() == "Makefile") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if rel == "cmd/pallasify/env.go" || rel == "cmd/pallasify/env_test.go" {
			return nil // the list itself
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range nameRE.FindAllString(string(b), -1) {
			if _, ok := found[n]; !ok {
				found[n] = rel
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, v := range envVars {
		if listed[v.Name] {
			t.Errorf("%s is listed twice in envVars", v.Name)
		}
		listed[v.Name] = true
		if strings.TrimSpace(v.Doc) == "" {
			t.Errorf("%s has no doc line", v.Name)
		}
		if _, ok := found[v.Name]; !ok {
			t.Errorf("envVars (cmd/pallasify/env.go) lists %s, which no code reads: remove it", v.Name)
		}
	}
next:
	for n, file := range found {
		if listed[n] {
			continue
		}
		for _, x := range notEnvVars {
			if x.re.MatchString(n) {
				continue next
			}
		}
		t.Errorf("%s (in %s) is not in envVars (cmd/pallasify/env.go): add it with a line on what it does, or to notEnvVars when it is not an environment variable", n, file)
	}
}

// TestHelpEnvironment: `pallasify help environment` lists every variable.
func TestHelpEnvironment(t *testing.T) {
	io, out, errOut := testStreams()
	if code := run([]string{"help", "environment"}, io); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, v := range envVars {
		if !strings.Contains(out.String(), "  "+v.Name+"  ") {
			t.Errorf("help environment lacks %s:\n%s", v.Name, out)
		}
	}
	for _, h := range []string{"Settings:", "Internal:", "Tests and development only:"} {
		if !strings.Contains(out.String(), h) {
			t.Errorf("help environment lacks the %q group", h)
		}
	}
}
