package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// textJSON are the formats of every reporting command but analyze and
// migrate (which take report.Formats).
var textJSON = []string{"text", "json"}

// The schema_version of each JSON document the commands print: an object's
// first key. A document's version goes up when a field is removed, renamed
// or changes meaning (new fields keep it). analyze and migrate print
// report.SchemaVersion. doctor and batch status print JSON arrays, as they
// did before documents were versioned: they carry no version (wrapping them
// in an object would break their consumers).
const (
	schemaVerify        = 1 // verify: {same, clean, original, migrated, tpu, ...}
	schemaVerifyImports = 1 // verify --imports: {failures, modules, tests, ...}
	schemaOps           = 1 // ops: {ops, without_tpu_kernel, run, report}
	schemaValidate      = 1 // validate: the verdict
	schemaBatch         = 1 // batch: the run's summary (as summary.json)
	schemaRules         = 1 // rules: {codes: [...]}; rules CODE: one code's fields
)

// bindFormat adds the --format flag every reporting command shares (into
// *format, default text; what names the output in its help) and, when
// asJSON is not nil, --json: the hidden, deprecated alias of --format json
// that scripts written before --format keep using.
func bindFormat(fl *pflag.FlagSet, format *string, asJSON *bool, what string, allowed ...string) {
	fl.StringVar(format, "format", "text", fmt.Sprintf("%s format: %s (JSON documents carry a schema_version)", what, orList(allowed)))
	if asJSON != nil {
		fl.BoolVar(asJSON, "json", false, "deprecated: same as --format json")
		_ = fl.MarkHidden("json")
	}
}

// resolveFormat returns the format a command prints in: format, or json
// under the deprecated --json (a note on errOut says so; nil: no note). An
// unknown format, or --json with another --format, is a usage error (exit
// 2) that names the allowed values.
func resolveFormat(errOut io.Writer, format string, asJSON bool, allowed ...string) (string, error) {
	if format == "" {
		format = "text"
	}
	if asJSON {
		if format != "text" && format != "json" {
			return "", usageErr(fmt.Errorf("--json means --format json: it cannot be combined with --format %s", format))
		}
		if errOut != nil {
			fmt.Fprintln(errOut, "pallasify: --json is deprecated: use --format json")
		}
		return "json", nil
	}
	if !slices.Contains(allowed, format) {
		return "", usageErr(fmt.Errorf("unknown --format %q (want %s)", format, orList(allowed)))
	}
	return format, nil
}

// orList is "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// writeJSON prints v, which encodes as a JSON object, indented, with
// "schema_version": version as its first key (<, > and & as they are).
func writeJSON(w io.Writer, version int, v any) error {
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return err
	}
	b := bytes.TrimSpace(enc.Bytes())
	if len(b) < 2 || b[0] != '{' {
		return fmt.Errorf("internal error: a %T is not a JSON object", v)
	}
	doc := fmt.Appendf(nil, `{"schema_version":%d`, version)
	if rest := bytes.TrimSpace(b[1:]); !bytes.Equal(rest, []byte("}")) {
		doc = append(append(doc, ','), rest...)
	} else {
		doc = append(doc, '}')
	}
	var out bytes.Buffer
	if err := json.Indent(&out, doc, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}
