package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestJSONSchemaVersion: the JSON report starts with its schema_version.
func TestJSONSchemaVersion(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, Build(sampleRun(), "analyze", rules), JSON); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "{\n  \"schema_version\": 1,\n") {
		t.Errorf("the JSON report does not start with schema_version 1:\n%.200s", b.String())
	}
}

// TestTextNamesConfig: the text report says which config file the run read.
func TestTextNamesConfig(t *testing.T) {
	rep := Build(sampleRun(), "analyze", rules)
	rep.Config = "repo/pyproject.toml [tool.pallasify]"
	var b bytes.Buffer
	if err := Write(&b, rep, Text); err != nil {
		t.Fatal(err)
	}
	if lines := strings.SplitN(b.String(), "\n", 3); len(lines) < 3 || lines[1] != "  config    repo/pyproject.toml [tool.pallasify]" {
		t.Errorf("no config line under the header:\n%.300s", b.String())
	}
}
