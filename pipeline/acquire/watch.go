package acquire

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"time"

	git "github.com/go-git/go-git/v5"

	"github.com/pallasify/pallasify/transforms/codes"
)

// Codes of the ACQ family: a remote that does not deliver. Open's error
// starts with one ("ACQ-STALLED: clone of URL received nothing for 2m0s").
const (
	// CodeTimeout (ACQ-TIMEOUT): the clone did not finish within its
	// deadline (Options.CloneTimeout), or another call to a git remote
	// within its own (Bounded: a delivery's fetch or push).
	CodeTimeout = "ACQ-TIMEOUT"
	// CodeStalled (ACQ-STALLED): the remote sent nothing and nothing was
	// written to the clone for Options.IdleTimeout, or it did not answer a
	// listing of its refs within that long.
	CodeStalled = "ACQ-STALLED"
)

func init() {
	codes.Register("acquire", "clone of a git URL",
		codes.Code{Code: CodeTimeout, Name: "clone-timeout", Severity: codes.Error,
			Title: "The clone did not finish within its deadline",
			Doc: "A clone of a git URL has a deadline (migrate's --clone-timeout, 10 minutes by default). A clone " +
				"still running then is stopped, its partial workspace removed, and the repository fails with this " +
				"code; nothing else is affected. Raise the limit for a very large repository. A delivery's calls to " +
				"the remote (listing its refs, fetching the branch, pushing) have the same limit each."},
		codes.Code{Code: CodeStalled, Name: "clone-stalled", Severity: codes.Error,
			Title: "The remote stopped sending",
			Doc: "No progress message came from the remote and no byte was written to the clone for the idle limit " +
				"(migrate's --clone-idle-timeout, 2 minutes by default): the server accepted the connection and then " +
				"went silent, or stopped in the middle of the pack. The clone is stopped and its partial workspace " +
				"removed. Listing a remote's refs (to decide whether a batch entry changed) has the same limit."},
	)
}

// Default limits of a clone.
const (
	DefaultCloneTimeout = 10 * time.Minute
	DefaultIdleTimeout  = 2 * time.Minute
	// abandonAfter is how long a clone that was told to stop is waited
	// for; one blocked where go-git does not watch its context (a dial) is
	// left to finish on its own, and its workspace removed when it does.
	abandonAfter = 5 * time.Second
)

// Bounded runs f with a context that ends after d; when that deadline
// (not ctx) stops f, the error is CodeTimeout's, naming what.
func Bounded(ctx context.Context, what string, d time.Duration, f func(context.Context) error) error {
	bctx, cancel := context.WithTimeoutCause(ctx, d, fmt.Errorf("%s: %s did not finish within %s", CodeTimeout, what, d))
	defer cancel()
	err := f(bctx)
	if err != nil && ctx.Err() == nil && bctx.Err() != nil {
		return context.Cause(bctx)
	}
	return err
}

// limit resolves an option: zero is def, negative is none (0).
func limit(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// progressCounter counts the progress bytes (side-band 2) the remote sends.
type progressCounter struct{ n atomic.Int64 }

func (p *progressCounter) Write(b []byte) (int, error) {
	p.n.Add(int64(len(b)))
	return len(b), nil
}

// watchedClone runs a go-git clone of url into dir under a deadline (total)
// and an idle limit: progress is a progress message from the remote or a
// change in the bytes written under dir (the pack as it arrives, then the
// checkout). Either limit cancels the clone with a coded error;
// cancellation of ctx returns ctx's error. abandon removes the workspace
// of a clone that outlives abandonAfter after being stopped.
func watchedClone(ctx context.Context, dir, url string, co *git.CloneOptions, total, idle time.Duration, abandon func()) (*git.Repository, error) {
	total = limit(total, DefaultCloneTimeout)
	idle = limit(idle, DefaultIdleTimeout)
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if total > 0 {
		t := time.AfterFunc(total, func() {
			cancel(fmt.Errorf("%s: clone of %s did not finish within %s", CodeTimeout, url, total))
		})
		defer t.Stop()
	}
	prog := &progressCounter{}
	co.Progress = prog
	if idle > 0 {
		go watchProgress(cctx, dir, idle, prog, func() {
			cancel(fmt.Errorf("%s: clone of %s received nothing for %s", CodeStalled, url, idle))
		})
	}
	type result struct {
		repo *git.Repository
		err  error
	}
	done := make(chan result, 1)
	go func() {
		repo, err := git.PlainCloneContext(cctx, dir, false, co)
		done <- result{repo, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-cctx.Done():
		select {
		case res = <-done:
		case <-time.After(abandonAfter):
			go func() { <-done; abandon() }()
			res.err = cctx.Err()
		}
	}
	switch {
	case res.err == nil:
		return res.repo, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("acquire: clone %s: %w", url, ctx.Err())
	case cctx.Err() != nil:
		return nil, context.Cause(cctx)
	}
	return nil, fmt.Errorf("acquire: clone %s: %w", url, res.err)
}

// watchProgress calls stalled once neither the remote's progress messages
// nor the bytes under dir have changed for idle, and returns when ctx ends.
func watchProgress(ctx context.Context, dir string, idle time.Duration, prog *progressCounter, stalled func()) {
	t := time.NewTicker(min(max(idle/8, 10*time.Millisecond), 5*time.Second))
	defer t.Stop()
	last := time.Now()
	msgs, size, files := int64(0), int64(-1), -1
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n := prog.n.Load(); n != msgs {
				msgs, last = n, now
				continue
			}
			// Only when the remote said nothing: the walk costs a stat per file.
			if s, f := treeSize(dir); s != size || f != files {
				size, files, last = s, f, now
				continue
			}
			if now.Sub(last) >= idle {
				stalled()
				return
			}
		}
	}
}

// treeSize is the bytes and the number of entries under dir (0, 0 while it
// does not exist).
func treeSize(dir string) (size int64, files int) {
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		files++
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	return size, files
}
