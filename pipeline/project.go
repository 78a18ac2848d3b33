package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/pallasify/pallasify/transforms/files"
)

// Project files: the files of a tree that are not Python but say how it
// runs (requirement sets, Dockerfiles, launchers, CI workflows, configs).
// The walk hands them to transforms/files (files.KindOf); setup.py is
// Python and rewritten as such, and its install_requires is read here too.

// createdFiles are the files the project rules create (a requirement set's
// TPU set on --target portable), gathered by the analyze stage's workers.
type createdFiles struct {
	mu    sync.Mutex
	files []*File
}

// processProject runs the project rules over f (src, already checked for
// size, NUL bytes and UTF-8) and returns its in-place rewrite, nil when
// unchanged. A file the rules create is kept for the rewrite stage.
func (st *state) processProject(ctx context.Context, f *File, src []byte) []byte {
	opts := files.Options{Target: st.opts.Target, UnsafeFixes: st.opts.UnsafeFixes, Exists: st.exists}
	res := files.Check(ctx, st.opts.Files, opts, f.Path, src)
	if res.Problem != nil {
		f.Skipped = res.Problem.Code
		f.Diagnostics = append(f.Diagnostics, Diagnostic{Code: res.Problem.Code, Severity: SevError, Path: f.Path,
			Line: res.Problem.Line, Col: 1, Message: res.Problem.Message})
		return nil
	}
	for _, fd := range res.Findings {
		f.Diagnostics = append(f.Diagnostics, findingDiag(f.Path, fd))
	}
	if res.New != nil && st.rewrite {
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		st.created.mu.Lock()
		st.created.files = append(st.created.files, &File{Path: res.New.Path, Lang: LangProject, Generated: true,
			Updated: res.New.Content, Mode: mode, Bytes: int64(len(res.New.Content)), Lines: countLines(res.New.Content)})
		st.created.mu.Unlock()
	}
	return res.Output
}

// exists reports whether the tree holds rel, walked or not (an ignored or
// excluded file is there all the same).
func (st *state) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(st.opts.Root, filepath.FromSlash(rel)))
	return err == nil
}

// addCreated adds the files the project rules created to the run.
func (st *state) addCreated(r *Run) {
	if len(st.created.files) == 0 {
		return
	}
	r.Files = append(r.Files, st.created.files...)
	st.created.files = nil
	sort.Slice(r.Files, func(i, j int) bool { return r.Files[i].Path < r.Files[j].Path })
}
