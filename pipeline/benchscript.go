package pipeline

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/pipeline/bench"
	"github.com/pallasify/pallasify/transforms/repofs"
)

// The benchmark script (`migrate --bench`, pallasify.yaml `bench:`): the
// rewrite stage adds pallasify_bench.py (pipeline/bench) to the run as a
// generated file, in Options.Bench.Dir, with the models it tries read from
// the tree (bench.Scan) unless the config names one. Run.Bench says where it
// is, so the report's next steps can give its command.

// BenchOptions asks for the benchmark script.
type BenchOptions struct {
	// Dir is the script's directory relative to the root (slash-separated;
	// "" or "." for the root).
	Dir string
	// Config is what the user named: a model, the step, an input shape.
	bench.Config
}

// Benchmark-script codes.
const (
	// CodeBenchNoModel (PBN001): no model was found in the tree; the script
	// says so when run.
	CodeBenchNoModel = "PBN001"
	// CodeBenchKept (PBN002): a pallasify_bench.py is already there and
	// differs; it is left as it is.
	CodeBenchKept = "PBN002"
)

// BenchCodes documents the PBN codes.
func BenchCodes() []CodeDoc {
	return []CodeDoc{
		{CodeBenchNoModel, "bench-no-model", SevWarning, "No model found for the benchmark script",
			"`migrate --bench` writes pallasify_bench.py, which builds the repository's model and times a training or " +
				"inference step. It tries the model classes and factories the tree defines: what a top package exports, " +
				"what entry scripts call or name, public functions that return a model class (or that a decorator " +
				"registers) and model classes that take no arguments or only a config class. None was found, so the script " +
				"says so when run instead of timing anything. Name the model in pallasify.yaml (`bench: {model: " +
				"\"package.module:factory\"}`, a factory function or a model class) and run `pallasify migrate --bench` " +
				"again, or pass `--model package.module:factory` to the script."},
		{CodeBenchKept, "bench-kept", SevInfo, "The benchmark script is already there",
			"A pallasify_bench.py is already where `migrate --bench` writes it, with other contents (an earlier " +
				"version, or one you edited). It is yours, so it is left as it is. Delete it (or choose another " +
				"directory with --bench-dir) to have a new one written."},
	}
}

// benchDir checks and cleans a benchmark directory.
func benchDir(dir string) (string, error) {
	if dir == "" {
		return ".", nil
	}
	d := path.Clean(strings.ReplaceAll(dir, "\\", "/"))
	if path.IsAbs(d) || d == ".." || strings.HasPrefix(d, "../") {
		return "", fmt.Errorf("bench directory %q is not inside the tree (give it relative to the root)", dir)
	}
	return d, nil
}

// addBench adds the benchmark script to the run.
func (st *state) addBench(ctx context.Context, r *Run) error {
	o := st.opts.Bench
	dir, err := benchDir(o.Dir)
	if err != nil {
		return err
	}
	var files []bench.File
	if o.Model == "" {
		for _, e := range st.entries {
			if e.diag != nil || !e.mode.IsRegular() || langOf(e.rel) != LangPython {
				continue
			}
			if b, err := repofs.ReadFile(st.opts.Root, e.rel, st.opts.MaxFileBytes); err == nil {
				files = append(files, bench.File{Rel: e.rel, Src: b})
			}
		}
	}
	cands, roots := bench.Scan(ctx, files)
	s := bench.Script{Dir: dir, ImportRoots: roots, Candidates: cands, Config: o.Config, LineLength: st.lineLength}
	src, err := s.Render(ctx)
	if err != nil {
		return err
	}
	p := s.Path()
	r.Bench = p
	if o.Model == "" && len(cands) == 0 {
		r.Diagnostics = append(r.Diagnostics, Diagnostic{Code: CodeBenchNoModel, Severity: SevWarning, Path: p,
			Message: "no model class or factory found for the benchmark; the script says so when run: name one in " +
				"pallasify.yaml (bench: {model: \"package.module:factory\"})"})
	}
	// A script already there (walked or not: an ignored directory) is the
	// user's: never replaced.
	var walked *File
	for _, f := range r.Files {
		if f.Path == p {
			walked = f
		}
	}
	cur, readErr := []byte(nil), error(nil)
	if walked != nil && walked.Updated != nil {
		cur = walked.Updated
	} else {
		cur, readErr = repofs.ReadFile(st.opts.Root, p, st.opts.MaxFileBytes)
	}
	if walked != nil || readErr == nil {
		if string(cur) != string(src) {
			d := Diagnostic{Code: CodeBenchKept, Severity: SevInfo, Path: p,
				Message: "a " + bench.FileName + " is already here: left as it is (delete it to have it written again)"}
			if walked != nil {
				walked.Diagnostics = append(walked.Diagnostics, d)
			} else {
				r.Diagnostics = append(r.Diagnostics, d)
			}
		}
		return nil
	}
	r.Files = append(r.Files, &File{Path: p, Lang: LangPython, Generated: true, Updated: src, Mode: 0o644,
		Bytes: int64(len(src)), Lines: countLines(src)})
	sort.Slice(r.Files, func(i, j int) bool { return r.Files[i].Path < r.Files[j].Path })
	return nil
}
