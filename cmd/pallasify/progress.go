package main

import (
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// isTerminal reports whether w is a terminal: progress bars and colour
// appear only there. It is the one terminal check of the command.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// fileBar is the "files done/total" bar of analyze and migrate (mpb, the
// same library as batch's per-repository bars).
type fileBar struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

// newFileBar draws a bar of total files on w.
func newFileBar(w io.Writer, total int) *fileBar {
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(40), mpb.WithRefreshRate(100*time.Millisecond))
	bar := p.AddBar(int64(total),
		mpb.PrependDecorators(decor.Name("files "), decor.CountersNoUnit("%d/%d", decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.AverageETA(decor.ET_STYLE_GO)),
		mpb.BarRemoveOnComplete())
	return &fileBar{p: p, bar: bar}
}

// set moves the bar to done files.
func (b *fileBar) set(done int) { b.bar.SetCurrent(int64(done)) }

// finish completes the bar and clears its line.
func (b *fileBar) finish() {
	b.bar.SetTotal(-1, true)
	b.p.Wait()
}

// abort stops the bar where it is (an interrupted run shows no 100%).
func (b *fileBar) abort() {
	b.bar.Abort(false)
	b.p.Wait()
}
