package kit_test

import (
	"context"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

// withPass parses src and calls fn with a pass over it, through a one-rule
// engine run (the only way to get a Pass).
func withPass(t *testing.T, src string, fn func(p *rule.Pass)) {
	t.Helper()
	r := &rule.Rule{Code: "PZZ001", Name: "probe", Run: fn}
	p := ts.NewParser(ts.Python)
	defer p.Close()
	if _, err := (&rule.Engine{Rules: []*rule.Rule{r}}).Run(context.Background(), p, "x.py", []byte(src)); err != nil {
		t.Fatal(err)
	}
}

func TestDeviceString(t *testing.T) {
	cases := []struct {
		lit   string
		ok    bool
		index string
		fstr  bool
	}{
		{`"cuda"`, true, "", false},
		{`'cuda:0'`, true, "0", false},
		{`"cuda:12"`, true, "12", false},
		{`f"cuda:{rank}"`, true, "rank", true},
		{`f"cuda:{args.local_rank}"`, true, "args.local_rank", true},
		{`r"cuda"`, true, "", false},
		{`"""cuda"""`, true, "", false},
		{`b"cuda"`, false, "", false},
		{`"cuda:x"`, false, "", false},
		{`"cudas"`, false, "", false},
		{`"CUDA"`, false, "", false},
		{`f"cuda:{r}:{x}"`, false, "", false},
		{`f"cuda:{r!r}"`, false, "", false},
		{`f"cuda"`, true, "", true},
		{`"cu" "da"`, false, "", false},
	}
	for _, c := range cases {
		withPass(t, "x = "+c.lit+"\n", func(p *rule.Pass) {
			n := p.Tree.Root().NamedChild(0).NamedChild(0).ChildByFieldName("right")
			s, ok := kit.DeviceString(p, n)
			if ok != c.ok || (ok && (s.Index != c.index || s.FString != c.fstr)) {
				t.Errorf("DeviceString(%s) = {Index:%q FString:%v}, %v; want {%q %v}, %v", c.lit, s.Index, s.FString, ok, c.index, c.fstr, c.ok)
			}
		})
	}
}

func TestIndexClassifiers(t *testing.T) {
	cases := []struct {
		expr                 string
		perProcess, indexish bool
	}{
		{"0", true, true},
		{"1", false, true},
		{"local_rank", true, true},
		{"args.gpu", true, true},
		{`int(os.environ["LOCAL_RANK"])`, true, true},
		{"i", false, true},
		{"device", false, false},
		{"self.dev", false, false},
		{"device_ids[0]", false, true},
		{"self.device_ids[local_rank]", true, true},
		{"device_id", false, true},
		{"devices[0]", false, false},
		{"device_idx", false, false},
	}
	for _, c := range cases {
		if got := kit.PerProcessIndex(c.expr); got != c.perProcess {
			t.Errorf("PerProcessIndex(%q) = %v; want %v", c.expr, got, c.perProcess)
		}
		if got := kit.IndexLike(c.expr); got != c.indexish {
			t.Errorf("IndexLike(%q) = %v; want %v", c.expr, got, c.indexish)
		}
	}
}

func TestDeviceName(t *testing.T) {
	own := "DEVICE = " + kit.DeviceExpr + "\n"
	cases := []struct{ name, src, want string }{
		{"free", "import torch\nx = 1\n", "DEVICE"},
		{"ours", "import torch\n" + own, "DEVICE"},
		{"ours, as the previous version wrote it", "import torch\nDEVICE = " + kit.PrevDeviceExpr + "\n", "DEVICE"},
		{"user binds DEVICE", "DEVICE = 'cuda'\n", "ACCEL_DEVICE"},
		{"parameter", "def f(DEVICE):\n    pass\n", "ACCEL_DEVICE"},
		{"import alias", "from cfg import dev as DEVICE\n", "ACCEL_DEVICE"},
		{"for target", "for DEVICE in devs:\n    pass\n", "ACCEL_DEVICE"},
		{"user and ours", "DEVICE = 'cuda'\nACCEL_DEVICE = " + kit.DeviceExpr + "\n", "ACCEL_DEVICE"},
		{"all taken", "DEVICE = 1\nACCEL_DEVICE = 2\nPALLASIFY_DEVICE = 3\n", "PALLASIFY_DEVICE_2"},
		{"use is not a binding", "print(DEVICE)\n", "DEVICE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			withPass(t, c.src, func(p *rule.Pass) {
				if got := kit.Device(p); got != c.want {
					t.Errorf("Device() = %q; want %q", got, c.want)
				}
			})
		})
	}
}

func TestAtName(t *testing.T) {
	own := func(fn, dev string) string { return kit.AtPrelude(fn, dev).Text }
	cases := []struct{ name, src, dev, want string }{
		{"free", "import torch\nx = 1\n", "DEVICE", "device_at"},
		{"ours", "import torch\n" + own("device_at", "DEVICE"), "DEVICE", "device_at"},
		{"ours for another DEVICE name is not ours", "import torch\n" + own("device_at", "DEVICE"), "ACCEL_DEVICE", "accel_device_at"},
		{"user def", "def device_at(i):\n    return i\n", "DEVICE", "accel_device_at"},
		{"user assignment", "device_at = {}\n", "DEVICE", "accel_device_at"},
		{"import", "from helpers import device_at\n", "DEVICE", "accel_device_at"},
		{"user and ours", "device_at = 1\n" + own("accel_device_at", "DEVICE"), "DEVICE", "accel_device_at"},
		{"all taken", "device_at = 1\naccel_device_at = 2\npallasify_device_at = 3\n", "DEVICE", "pallasify_device_at_2"},
		{"a use may come from a star import", "from utils import *\nx = device_at(3)\n", "DEVICE", "accel_device_at"},
		{"in a string or comment", "x = 'device_at'  # device_at\n", "DEVICE", "device_at"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			withPass(t, c.src, func(p *rule.Pass) {
				if got := kit.At(p, c.dev); got != c.want {
					t.Errorf("At() = %q; want %q", got, c.want)
				}
			})
		})
	}
}

func TestReportRequotes(t *testing.T) {
	src := "x = f\"{a}\"\ny = f'{b}'\nz = c\n"
	offsets := map[string]int{"a": 7, "b": 18, "c": 26}
	want := map[string]string{"a": `g('k')`, "b": `g("k")`, "c": `g("k")`}
	withPass(t, src, func(p *rule.Pass) {
		for name, off := range offsets {
			if string(p.Src[off]) != name {
				t.Fatalf("offset of %s is wrong: %q", name, p.Src[off])
			}
			f := rule.Finding{Start: off, End: off + 1, Fix: &rule.Fix{Edits: []rule.Edit{{Start: off, End: off + 1, New: `g("k")`}}}}
			kit.Report(p, f)
			if got := f.Fix.Edits[0].New; got != want[name] {
				t.Errorf("edit of %s = %s; want %s", name, got, want[name])
			}
		}
	})
}
