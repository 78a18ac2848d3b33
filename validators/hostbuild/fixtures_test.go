package hostbuild

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/validators/sandbox"
)

// fixture is fixtures/hostpatterns/<name>/fixture.json: how the fixture's
// extension is built, the driver that runs it (with its own check), and what
// its captures must show.
type fixture struct {
	Module      string            `json:"module"`
	Sources     []string          `json:"sources"`
	IncludeDirs []string          `json:"include_dirs"`
	Defines     map[string]string `json:"defines"`
	Entry       []string          `json:"entry"`
	Want        []wantLaunch      `json:"want"`
}

type wantLaunch struct {
	Kernel   string    `json:"kernel"`
	Instance string    `json:"instance"`
	Grid     *[3]int   `json:"grid"`
	Block    *[3]int   `json:"block"`
	Shared   *int      `json:"shared_bytes"`
	Launches int       `json:"launches"` // recorded launches of this instance (0: at least one)
	Nth      int       `json:"nth"`      // which of the matching launches the checks below apply to
	Probe    string    `json:"probe"`    // the launch came from the backward probe of this Function
	StandIns []string  `json:"standins"` // absent data files read (as stand-ins) before the launch
	Args     []wantArg `json:"args"`
}

type wantArg struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind"`
	DType    string   `json:"dtype"`
	Role     string   `json:"role"`
	Origin   string   `json:"origin"`
	Offset   *int64   `json:"offset_bytes"`
	Elements int64    `json:"elements"`
	Shape    []int64  `json:"shape"`
	Value    *float64 `json:"value"`
	Null     bool     `json:"null"` // passed as NULL (an empty tensor's data_ptr), in no allocation
}

func testPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("PALLASIFY_PYTHON")
	if py == "" {
		py = filepath.Join("..", "..", ".venv", "bin", "python")
	}
	if _, err := os.Stat(py); err != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") != "" {
			t.Fatalf("PALLASIFY_REQUIRE_STACK is set but the Python stack is missing (%s)", py)
		}
		t.Skip("no Python venv (make venv)")
	}
	abs, err := filepath.Abs(py)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func testSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("g++ not installed")
	}
	sb := &sandbox.Sandbox{}
	if err := sb.Check(context.Background()); err != nil {
		t.Logf("bubblewrap unavailable, running unconfined: %v", err)
		sb.Disabled = true
	}
	return sb
}

// testCache is shared by test runs (content-hashed, so always valid): the
// precompiled prelude and the fixture builds are made once per machine.
func testCache(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("PALLASIFY_HOSTBUILD_CACHE"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "pallasify-hostbuild-cache")
}

// TestHostPatternFixtures builds each fixture's extension for the CPU, runs
// its driver (which checks the op against plain PyTorch) in cuda-as-cpu mode,
// and checks that the captured launches have the shapes, dtypes, roles and
// launch configuration its fixture.json expects.
func TestHostPatternFixtures(t *testing.T) {
	if testing.Short() {
		t.Skip("short: builds extensions against libtorch")
	}
	py := testPython(t)
	sb := testSandbox(t)
	cache := testCache(t)
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "hostpatterns", "*", "fixture.json"))
	if len(dirs) == 0 {
		t.Fatal("no fixtures/hostpatterns/*/fixture.json")
	}
	for _, fj := range dirs {
		dir := filepath.Dir(fj)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var fx fixture
			b, err := os.ReadFile(fj)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &fx); err != nil {
				t.Fatalf("%s: %v", fj, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			built, err := Build(ctx, sb, cache, BuildRequest{Root: dir, Module: fx.Module, Sources: fx.Sources, IncludeDirs: fx.IncludeDirs, Defines: fx.Defines, Python: py})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			res, err := Run(ctx, sb, RunRequest{Root: dir, Built: []*Built{built}, Entry: fx.Entry, Python: py, CaptureDir: t.TempDir()})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != 0 {
				t.Fatalf("driver exit %d:\n%s", res.ExitCode, res.Output)
			}
			for _, w := range fx.Want {
				checkWant(t, res.Launches, w)
			}
		})
	}
}

func checkWant(t *testing.T, ls []Launch, w wantLaunch) {
	t.Helper()
	var got []Launch
	for _, l := range ls {
		if l.Kernel == w.Kernel && (w.Instance == "" || l.Instance == w.Instance) {
			got = append(got, l)
		}
	}
	if len(got) == 0 {
		var seen []string
		for _, l := range ls {
			seen = append(seen, l.Instance)
		}
		t.Errorf("no launch of %s %s captured; captured: %v", w.Kernel, w.Instance, seen)
		return
	}
	if w.Launches > 0 && len(got) != w.Launches {
		t.Errorf("%s: %d launches captured; want %d", w.Instance, len(got), w.Launches)
	}
	if w.Nth >= len(got) {
		t.Errorf("%s: launch #%d wanted, %d captured", w.Instance, w.Nth, len(got))
		return
	}
	l := got[w.Nth]
	if l.Error != "" {
		t.Errorf("%s: launch error %s", l.Instance, l.Error)
	}
	if !slices.Equal(l.StandIns, w.StandIns) {
		t.Errorf("%s: standins = %v; want %v", l.Instance, l.StandIns, w.StandIns)
	}
	if l.Probe != w.Probe {
		t.Errorf("%s: probe = %q; want %q", l.Instance, l.Probe, w.Probe)
	}
	if w.Grid != nil && l.Grid != *w.Grid {
		t.Errorf("%s: grid = %v; want %v", l.Instance, l.Grid, *w.Grid)
	}
	if w.Block != nil && l.Block != *w.Block {
		t.Errorf("%s: block = %v; want %v", l.Instance, l.Block, *w.Block)
	}
	if w.Shared != nil && l.SharedBytes != *w.Shared {
		t.Errorf("%s: shared_bytes = %d; want %d", l.Instance, l.SharedBytes, *w.Shared)
	}
	if len(l.Args) != len(w.Args) {
		t.Errorf("%s: %d args; want %d", l.Instance, len(l.Args), len(w.Args))
		return
	}
	for i, wa := range w.Args {
		a := l.Args[i]
		where := fmt.Sprintf("%s arg %d (%s)", l.Instance, i, a.Name)
		if a.Name != wa.Name {
			t.Errorf("%s: name = %q; want %q", where, a.Name, wa.Name)
		}
		if wa.Kind != "" && a.Kind != wa.Kind {
			t.Errorf("%s: kind = %q; want %q", where, a.Kind, wa.Kind)
		}
		if wa.DType != "" && a.DType != wa.DType {
			t.Errorf("%s: dtype = %q; want %q", where, a.DType, wa.DType)
		}
		if wa.Role != "" && a.Role != wa.Role {
			t.Errorf("%s: role = %q; want %q (read %v written %v, roles from %s)", where, a.Role, wa.Role, a.Read, a.Written, l.RolesFrom)
		}
		if wa.Origin != "" && (a.Alloc == nil || a.Alloc.Origin != wa.Origin) {
			t.Errorf("%s: alloc = %+v; want origin %s", where, a.Alloc, wa.Origin)
		}
		if null := a.Kind == "pointer" && a.Alloc == nil && sameAddress(a.Address, "0x0"); null != wa.Null {
			t.Errorf("%s: address %s alloc %+v: NULL = %v; want %v", where, a.Address, a.Alloc, null, wa.Null)
		}
		if wa.Offset != nil && a.OffsetBytes != *wa.Offset {
			t.Errorf("%s: offset_bytes = %d; want %d", where, a.OffsetBytes, *wa.Offset)
		}
		if wa.Elements != 0 && a.Elements() != wa.Elements {
			t.Errorf("%s: extent = %d elements; want %d", where, a.Elements(), wa.Elements)
		}
		if wa.Shape != nil && !slices.Equal(a.ShapeHint, wa.Shape) {
			t.Errorf("%s: shape_hint = %v; want %v", where, a.ShapeHint, wa.Shape)
		}
		if wa.Value != nil {
			if v, ok := a.Scalar(); !ok || v != *wa.Value {
				t.Errorf("%s: value = %s; want %v", where, strings.TrimSpace(string(a.Value)), *wa.Value)
			}
		}
		if a.Kind == "pointer" && a.Role != "" {
			before, err1 := l.BeforeBytes(i)
			after, err2 := l.AfterBytes(i)
			if err1 != nil || err2 != nil || int64(len(before)) != a.ExtentBytes || int64(len(after)) != a.ExtentBytes {
				t.Errorf("%s: captured contents unreadable or of the wrong size (%v, %v)", where, err1, err2)
			}
		}
	}
}
