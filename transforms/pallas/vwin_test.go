package pallas_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/pallas"
)

// TestWindowsChosen: _vwin (the windowed in-kernel form, vwin.go) gives
// each array the smallest block of its layout that holds every grid step's
// reads, only where the thread reads them, and declines (None: the padded
// form) a read outside the array, windows past the VMEM budget and an
// output past 16M elements.
func TestWindowsChosen(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python (-short)")
	}
	py := testPython(t)
	res, err := pallas.Draft(context.Background(), testdataKernel(t, "float32_instance"), pallas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Module, "def _run_win(") {
		t.Fatal("float32_instance's draft has no windowed form (_run_win)")
	}
	mod := writeDraft(t, res.Module)
	script := draftScript + `view = np.zeros((4, 8, 128), np.float32)
meta = ((4, 8, 128), (0, 1, 2))
own = np.arange(4 * 8 * 128).reshape(4, 8, 128)
def show(w):
    print("none" if w is None else (w[1], np.asarray(w[0]).tolist()))
# each step (one lead of the output) reads its own lead, and the next lead's
# first row where the thread reads it: the next lead's row is read nowhere
nxt = np.minimum(own + 8 * 128, 4 * 8 * 128 + 5)
show(m._vwin([(view, meta, [[own], [nxt]], [[True], [False]])], (4, 8, 128), (8, 128)))
show(m._vwin([(view, meta, [[own]], None)], (4, 8, 128), (8, 128)))
# read where the thread reads it: past the array's end
show(m._vwin([(view, meta, [[own, nxt]], [[True, True]])], (4, 8, 128), (8, 128)))
# every step reads all of a (600, 8, 128) array: 2.4 MB, past the budget
big = np.zeros((600, 8, 128), np.float32)
every = [np.full((4, 8, 128), j * 1024) for j in range(600)]
show(m._vwin([(big, ((600, 8, 128), (0, 1, 2)), [every], None)], (4, 8, 128), (8, 128)))
# an output past 16M elements: not checked at all (the check's own cost)
show(m._vwin([(view, meta, [[own]], None)], (256, 256, 257), (8, 128)))
`
	out, err := exec.Command(py, "-c", script, mod).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, tail(string(out)))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{
		"([(1, 8, 128)], [0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0])",
		"([(1, 8, 128)], [0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0])",
		"none",
		"none",
		"none",
	}
	if len(lines) < len(want) {
		t.Fatalf("want %d lines, got\n%s", len(want), out)
	}
	got := lines[len(lines)-len(want):]
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("case %d: want %s, got %s", i, want[i], got[i])
		}
	}
}
