package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pallasify/pallasify/pipeline/report"
	"github.com/pallasify/pallasify/validators/importcheck"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// runVerifyImports is verify --imports: the import check of the migrated
// tree (--against, or PATH migrated in memory) against PATH.
func runVerifyImports(ctx context.Context, o *verifyOptions) error {
	if err := o.resolveFormat(textJSON...); err != nil {
		return err
	}
	if fi, err := os.Stat(o.Path); err != nil || !fi.IsDir() {
		return usageErr(fmt.Errorf("%s: not a directory", o.Path))
	}
	migrated := o.Against
	if migrated == "" {
		dir, changed, err := migrateForVerify(ctx, o)
		if err != nil {
			return err
		}
		defer os.RemoveAll(filepath.Dir(dir))
		migrated = dir
		fmt.Fprintf(o.IO.ErrOut, "migrated %d file(s); importing both trees\n", changed)
	}
	rep, err := importcheck.Check(ctx, migrated, o.Path, importcheck.Options{Python: o.Python,
		Sandbox: &sandbox.Sandbox{Disabled: o.NoSandbox}, ModuleTimeout: o.ModuleTimeout, Timeout: o.Timeout})
	if err != nil {
		return runErr(ctx, err)
	}
	if o.JSON {
		if err := writeJSON(o.IO.Out, schemaVerifyImports, struct {
			Failures int `json:"failures"`
			*importcheck.Report
		}{rep.Failures(), rep}); err != nil {
			return usageErr(err)
		}
	} else {
		fmt.Fprint(o.IO.Out, report.Printable(rep.Text(false)))
	}
	if rep.Failures() > 0 {
		return &exitError{code: 1}
	}
	return nil
}
