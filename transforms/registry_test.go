package transforms_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
)

var (
	codeRE = regexp.MustCompile(`^P[A-Z]{2}[0-9]{3}$`)
	nameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
)

func TestRegistryWellFormed(t *testing.T) {
	all := transforms.All()
	if len(all) == 0 {
		t.Fatal("registry is empty")
	}
	codes, names := map[string]string{}, map[string]string{}
	prefixFamily, familyPrefix := map[string]string{}, map[string]string{}
	for _, r := range all {
		if !codeRE.MatchString(r.Code) {
			t.Errorf("%s: code is not a family prefix plus three digits", r.Code)
		}
		if prev, ok := codes[r.Code]; ok {
			t.Errorf("code %s used by %s and %s", r.Code, prev, r.Name)
		}
		codes[r.Code] = r.Name
		if !nameRE.MatchString(r.Name) {
			t.Errorf("%s: name %q is not kebab-case", r.Code, r.Name)
		}
		if prev, ok := names[r.Name]; ok {
			t.Errorf("name %s used by %s and %s", r.Name, prev, r.Code)
		}
		names[r.Name] = r.Code
		if r.Family == "" {
			t.Errorf("%s: no family", r.Code)
		}
		prefix := r.Code[:3]
		if f, ok := prefixFamily[prefix]; ok && f != r.Family {
			t.Errorf("%s: prefix %s belongs to family %s, not %s", r.Code, prefix, f, r.Family)
		}
		if p, ok := familyPrefix[r.Family]; ok && p != prefix {
			t.Errorf("%s: family %s uses prefix %s, not %s", r.Code, r.Family, p, prefix)
		}
		prefixFamily[prefix], familyPrefix[r.Family] = r.Family, prefix
		if r.Run == nil && !r.Removed {
			t.Errorf("%s: no Run", r.Code)
		}
	}
}

func TestRegistryDocs(t *testing.T) {
	for _, r := range transforms.All() {
		if r.Title() == "" || strings.HasPrefix(strings.TrimSpace(r.Doc), "#") {
			t.Errorf("%s: the first line of Doc must be the title", r.Code)
		}
		sections := []string{"## What it does", "## Why", "## Example"}
		if r.Safety != rule.Safe {
			sections = append(sections, "## Fix safety")
		}
		last := -1
		for _, s := range sections {
			i := strings.Index(r.Doc, "\n"+s+"\n")
			if i < 0 {
				t.Errorf("%s: Doc lacks a %q section", r.Code, s)
				continue
			}
			if i < last {
				t.Errorf("%s: section %q is out of order", r.Code, s)
			}
			last = i
		}
		if strings.TrimSpace(r.Example.Before) == "" {
			t.Errorf("%s: Example.Before is empty", r.Code)
		} else if !strings.Contains(r.Doc, strings.TrimRight(r.Example.Before, "\n")) {
			t.Errorf("%s: Doc does not show Example.Before", r.Code)
		}
		for _, out := range []string{r.Example.Portable, r.Example.TPU} {
			if out != "" && !strings.Contains(r.Doc, strings.TrimRight(out, "\n")) {
				t.Errorf("%s: Doc does not show the example output:\n%s", r.Code, out)
			}
		}
	}
}

// TestRegistryExamples runs the one doc and example check (ruletest.Docs) over
// the whole registry: codes unique across families, every Example run alone
// for both targets with unsafe fixes, its output shown in the doc.
func TestRegistryExamples(t *testing.T) { ruletest.Docs(t, transforms.All()) }

func TestLookup(t *testing.T) {
	for _, r := range transforms.All() {
		for _, key := range []string{r.Code, strings.ToLower(r.Code), r.Name} {
			if got := transforms.Lookup(key); got != r {
				t.Errorf("Lookup(%q) = %v; want %s", key, got, r.Code)
			}
		}
	}
	for _, key := range []string{"", "PDV", "PDV999", "nope"} {
		if got := transforms.Lookup(key); got != nil {
			t.Errorf("Lookup(%q) = %s; want nil", key, got.Code)
		}
	}
}

func TestSelect(t *testing.T) {
	all := transforms.All()
	byPrefix := func(prefix string) []string {
		var out []string
		for _, r := range all {
			if strings.HasPrefix(r.Code, prefix) && !r.Removed {
				out = append(out, r.Code)
			}
		}
		return out
	}
	allCodes := byPrefix("P")
	without := func(codes []string, drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(codes), func(c string) bool { return slices.Contains(drop, c) })
	}
	cases := []struct {
		name        string
		sel, ignore []string
		want        []string
		err         string
	}{
		{name: "empty selects all", want: allCodes},
		{name: "ALL", sel: []string{"ALL"}, want: allCodes},
		{name: "family prefix", sel: []string{"PDV"}, want: byPrefix("PDV")},
		{name: "lower-case prefix", sel: []string{"pcu"}, want: byPrefix("PCU")},
		{name: "one code", sel: []string{"PDV002"}, want: []string{"PDV002"}},
		{name: "by name", sel: []string{"cuda-method"}, want: []string{"PDV002"}},
		{name: "comma list", sel: []string{"PDV001,PAM"}, want: append([]string{"PDV001"}, byPrefix("PAM")...)},
		{name: "ignore one", sel: []string{"PDV"}, ignore: []string{"PDV003"}, want: without(byPrefix("PDV"), "PDV003")},
		{name: "ignore family", ignore: []string{"PDX"}, want: without(allCodes, byPrefix("PDX")...)},
		{name: "registry order kept", sel: []string{"PDS", "PDV001"}, want: append([]string{"PDV001"}, byPrefix("PDS")...)},
		{name: "unknown select", sel: []string{"PZZ"}, err: "no rule"},
		{name: "unknown ignore", ignore: []string{"cuda-methd"}, err: "no rule"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := transforms.Select(all, c.sel, c.ignore)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Select(%v, %v) error = %v; want %q", c.sel, c.ignore, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, r := range got {
				codes = append(codes, r.Code)
			}
			if !slices.Equal(codes, c.want) {
				t.Errorf("Select(%v, %v) = %v; want %v", c.sel, c.ignore, codes, c.want)
			}
		})
	}
}

func TestSelectSkipsRemoved(t *testing.T) {
	live := &rule.Rule{Code: "PZZ001", Name: "live"}
	gone := &rule.Rule{Code: "PZZ002", Name: "gone", Removed: true}
	got, err := transforms.Select([]*rule.Rule{live, gone}, []string{"PZZ"}, nil)
	if err != nil || len(got) != 1 || got[0] != live {
		t.Fatalf("Select = %v, %v; want only the live rule", got, err)
	}
}

// trainScript uses every idiom the core families rewrite, so their fixes
// meet in one file: they must not overlap, must reach a fixed point in one
// pass, and must compile.
const trainScript = `"""DDP + AMP training on "cuda"."""
import argparse
import os

import torch
import torch.distributed as dist
from torch.cuda.amp import GradScaler, autocast
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--backend", default="nccl")
    args = parser.parse_args()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend=args.backend)
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    device = torch.device(f"cuda:{local_rank}")
    model = Net().cuda()
    model = DDP(model, device_ids=[local_rank], output_device=local_rank)
    scaler = GradScaler()
    opt = torch.optim.AdamW(model.parameters())
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.to(device)
        with autocast():
            loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    torch.cuda.synchronize()
    if device.type == "cuda":
        print(torch.cuda.max_memory_allocated() / 2**30, torch.cuda.get_device_name())
    if torch.cuda.is_available() and torch.cuda.device_count() > 1:
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
`

// nanoScript is shaped like nanoGPT's train.py: device strings held in
// variables, a device_type derived by comparison, a float16-aware scaler.
const nanoScript = `import os
import time
from contextlib import nullcontext

import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed import init_process_group, destroy_process_group

backend = 'nccl'  # 'nccl', 'gloo', etc.
device = 'cuda'  # examples: 'cpu', 'cuda', 'cuda:0', 'cuda:1' etc., or try 'mps' on macbooks
dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'
compile = True
ddp = int(os.environ.get('RANK', -1)) != -1
if ddp:
    init_process_group(backend=backend)
    ddp_local_rank = int(os.environ['LOCAL_RANK'])
    device = f'cuda:{ddp_local_rank}'
    torch.cuda.set_device(device)
torch.manual_seed(1337)
torch.backends.cuda.matmul.allow_tf32 = True
device_type = 'cuda' if 'cuda' in device else 'cpu'
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
model.to(device)
scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))
if compile:
    model = torch.compile(model)
if ddp:
    model = DDP(model, device_ids=[ddp_local_rank])
x, y = x.pin_memory().to(device, non_blocking=True), y.to(device)
t0 = time.time()
torch.cuda.synchronize()
`

// ckptScript mixes device indices, the --device option's choices, legacy
// tensor types, generator state and device contexts: rules that write into
// one another's arguments.
const ckptScript = `import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
args = parser.parse_args()
local_rank = args.local_rank
torch.cuda.set_device(local_rank)
dev = torch.device("cuda", torch.cuda.current_device())
state = torch.load("ckpt.pt", map_location=f"cuda:{local_rank}")
torch.cuda.set_rng_state(state["rng"], "cuda")
rng = torch.cuda.get_rng_state(device="cuda")
with torch.cuda.device(local_rank):
    buf = torch.cuda.FloatTensor(4, 4)
    ids = torch.cuda.LongTensor([1, 2]).to(f"cuda:{local_rank}")
half = buf.type(torch.cuda.HalfTensor)
print(torch.cuda.get_device_name(local_rank), torch.cuda.get_device_properties(local_rank).total_memory)
if args.device == "cuda" and not dev.type != "cuda":
    torch.cuda.synchronize()
`

func TestAllRulesTogether(t *testing.T) {
	comp := ruletest.NewCompiler(t)
	for _, sample := range []struct{ name, src string }{{"train", trainScript}, {"nano", nanoScript}, {"ckpt", ckptScript}} {
		for _, tg := range rule.Targets {
			for _, unsafe := range []bool{false, true} {
				checkTogether(t, comp, sample.name, sample.src, rule.Options{Target: tg, UnsafeFixes: unsafe})
			}
		}
	}
	comp.Check(t)
}

func checkTogether(t *testing.T, comp *ruletest.Compiler, name, src string, opts rule.Options) {
	t.Helper()
	tg := opts.Target
	r := ruletest.Run(t, transforms.All(), opts, []byte(src))
	for _, f := range r.Findings {
		if f.Skipped != "" && !strings.HasPrefix(f.Skipped, "unsafe") {
			t.Errorf("%s %s %s line %d: fix skipped: %s", name, tg, f.Code, f.Line, f.Skipped)
		}
	}
	out := ruletest.Check(t, transforms.All(), opts, []byte(src))
	if tg == rule.TPU && opts.UnsafeFixes && strings.Contains(string(out), "torch.cuda.") {
		t.Errorf("%s %s: torch.cuda calls remain:\n%s", name, tg, out)
	}
	for _, word := range []string{`"cuda"`, `'cuda'`, `"nccl"`, `'nccl'`} {
		// An assignment, not a comparison (device_at's `DEVICE.type == "cuda"`).
		if tg == rule.TPU && regexp.MustCompile(`[^=!<>]= `+regexp.QuoteMeta(word)).Match(out) {
			t.Errorf("%s %s: %s is still assigned:\n%s", name, tg, word, out)
		}
	}
	comp.Add(t, name+"."+string(tg), out)
}
