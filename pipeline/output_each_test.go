package pipeline

import (
	"errors"
	"fmt"
	"testing"
)

// TestEachFileDiff: the diffs made ahead on every core come to fn in the
// order of the files, each FileDiff's, and fn's first error stops them.
func TestEachFileDiff(t *testing.T) {
	var files []*File
	for i := range 200 {
		orig := fmt.Sprintf("a = %d\nb = 2\n", i)
		f := &File{Path: fmt.Sprintf("f%03d.py", i), Original: []byte(orig), Updated: []byte(orig + "c = 3\n")}
		if i%7 == 0 {
			f.Updated = nil // unchanged: an empty diff
		}
		files = append(files, f)
	}
	i := 0
	err := EachFileDiff(files, func(f *File, diff string) error {
		if f != files[i] {
			t.Fatalf("call %d: file %s, want %s", i, f.Path, files[i].Path)
		}
		if want := FileDiff(f); diff != want {
			t.Fatalf("%s: diff %q, want %q", f.Path, diff, want)
		}
		i++
		return nil
	})
	if err != nil || i != len(files) {
		t.Fatalf("%d calls, error %v; want %d, nil", i, err, len(files))
	}
	stop := errors.New("stop")
	calls := 0
	err = EachFileDiff(files, func(*File, string) error {
		calls++
		if calls == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 5 {
		t.Fatalf("%d calls, error %v; want 5, stop", calls, err)
	}
}
