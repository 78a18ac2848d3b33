// Package patterns loads the rule drafter's pattern kernels, the folders of
// transforms/pallas/testdata holding a kernel.cu whose one kernel has a spec.
// transforms/pallas's tests and cmd/pallasify-bench both load them here, so
// they agree on which ones go through the C preprocessor first: a pattern
// needs it when its folder holds a Marker file (the capture stage
// preprocesses every captured unit; these patterns stand for such units).
// It lives in pipeline, not transforms, because it preprocesses as the
// capture stage does (pipeline, validators/sandbox): layering, TestLayering.
package patterns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// Marker is the file whose presence in a pattern's folder says that its
// unit is drafted after preprocessing (its text says why).
const Marker = "PREPROCESS"

// ErrNoPattern: the folder has no kernel.cu with exactly one kernel that has
// a spec.
var ErrNoPattern = errors.New("not a pattern: no kernel.cu with one kernel and a spec")

// Preprocessed reports whether dir's pattern goes through the preprocessor.
func Preprocessed(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, Marker))
	return err == nil
}

// Load discovers dir's one kernel with its spec, its unit preprocessed when
// dir is marked.
func Load(ctx context.Context, dir string) (*kernels.Kernel, error) {
	k, err := LoadRaw(ctx, dir)
	if err != nil || !Preprocessed(dir) {
		return k, err
	}
	if err := Preprocess(ctx, k); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(dir), err)
	}
	return k, nil
}

// LoadRaw discovers dir's one kernel with its spec, its unit as written (a
// template whose spec binds double made its float32 instantiation, as the
// capture stage makes it: kernels.Float32Instance).
func LoadRaw(ctx context.Context, dir string) (*kernels.Kernel, error) {
	if _, err := os.Stat(filepath.Join(dir, "kernel.cu")); err != nil {
		return nil, ErrNoPattern
	}
	inv, _ := kernels.Discover(ctx, dir, []string{"kernel.cu"})
	if len(inv.Kernels) != 1 || inv.Kernels[0].Spec == nil {
		return nil, ErrNoPattern
	}
	k := inv.Kernels[0]
	// a template spec'd at double, as the capture stage records one its
	// tests launch at float64 only, is its float32 instantiation there too
	kernels.Float32Instance(k)
	return k, nil
}

// Preprocess replaces k's unit by its preprocessed text, in the sandbox
// when bubblewrap starts here (as the capture stage does).
func Preprocess(ctx context.Context, k *kernels.Kernel) error {
	sb := &sandbox.Sandbox{}
	sb.Disabled = sb.Check(ctx) != nil
	src, err := pipeline.Preprocess(ctx, sb, k.Unit.Source)
	if err != nil {
		return err
	}
	k.Unit.SetPreprocessed(src)
	return nil
}
