package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// genVersion changes whenever the generator's output changes, so a stale
// tree under .bench is regenerated.
const genVersion = "6"

// treeStats describes a generated tree.
type treeStats struct {
	Files, Lines, CUDAFiles int
}

// generate writes a tree of about lines lines of Python under dir, shaped
// like a real repository: packages of modules, tests and scripts, most of
// them ordinary Python (some importing torch without touching CUDA) and
// about one file in cudaEvery using CUDA idioms. cudaEvery 1 makes every
// file need rewriting. The output is deterministic for given arguments.
func generate(dir string, lines, cudaEvery int, seed uint64) (treeStats, error) {
	stamp := filepath.Join(dir, ".bench-stamp")
	want := fmt.Sprintf("v%s lines=%d cuda=%d seed=%d\n", genVersion, lines, cudaEvery, seed)
	if b, err := os.ReadFile(stamp); err == nil && strings.HasPrefix(string(b), want) {
		var st treeStats
		if _, err := fmt.Sscanf(strings.TrimPrefix(string(b), want), "files=%d lines=%d cuda=%d", &st.Files, &st.Lines, &st.CUDAFiles); err == nil {
			return st, nil
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return treeStats{}, err
	}
	// The tree is its own (empty) git work tree: without it a tree under the
	// checkout's ignored .bench/ would inherit that .gitignore and the walk
	// would find no files at all.
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		return treeStats{}, err
	}
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	g := &gen{r: r}
	var st treeStats
	pkgs := []string{"core", "models", "data", "utils", "training", "serving", "eval", "ops", "io", "configs"}
	for st.Lines < lines {
		pkg := pkgs[r.IntN(len(pkgs))]
		sub := fmt.Sprintf("%s_%d", g.word(), r.IntN(40))
		var rel string
		switch k := r.IntN(10); {
		case k < 7:
			rel = filepath.Join("src", "proj", pkg, sub, g.word()+"_"+g.word()+".py")
		case k < 9:
			rel = filepath.Join("tests", pkg, "test_"+g.word()+"_"+g.word()+".py")
		default:
			rel = filepath.Join("scripts", g.word()+"_"+g.word()+".py")
		}
		cuda := r.IntN(cudaEvery) == 0
		var text string
		if cuda {
			text = g.cudaFile()
			st.CUDAFiles++
		} else {
			text = g.plainFile()
		}
		full := filepath.Join(dir, rel)
		if _, err := os.Stat(full); err == nil {
			if cuda {
				st.CUDAFiles--
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return st, err
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			return st, err
		}
		st.Files++
		st.Lines += strings.Count(text, "\n")
	}
	// Some non-Python files, as in any repository.
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# proj\n\nRuns on cuda.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("build/\n*.ckpt\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte("torch\nnumpy\n"), 0o644)
	f, err := os.Create(stamp)
	if err != nil {
		return st, err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "%sfiles=%d lines=%d cuda=%d\n", want, st.Files, st.Lines, st.CUDAFiles)
	w.Flush()
	return st, f.Close()
}

type gen struct {
	r *rand.Rand
	b strings.Builder
}

var words = []string{"batch", "loader", "config", "state", "model", "layer", "token", "cache", "index", "record",
	"sample", "metric", "weight", "buffer", "shard", "queue", "result", "parser", "schema",
	"vocab", "image", "audio", "graph", "node", "edge", "block", "window", "kernel", "score", "label", "split",
	"stats", "writer", "reader", "store", "client", "server", "worker", "task", "job", "step", "epoch", "optim"}

func (g *gen) word() string { return words[g.r.IntN(len(words))] }

func (g *gen) line(format string, args ...any) {
	fmt.Fprintf(&g.b, format, args...)
	g.b.WriteByte('\n')
}

func (g *gen) take() string {
	s := g.b.String()
	g.b.Reset()
	return s
}

func (g *gen) header(torch bool) {
	g.line(`"""%s %s utilities.`, strings.ToUpper(g.word()[:1])+g.word()[1:], g.word())
	g.line("")
	g.line("This module is part of the proj package; see the docs for the %s workflow.", g.word())
	g.line(`"""`)
	g.line("from __future__ import annotations")
	g.line("")
	imports := []string{"import json", "import logging", "import os", "import re", "import sys", "import math",
		"from dataclasses import dataclass, field", "from pathlib import Path", "from typing import Any, Dict, Iterable, List, Optional",
		"from collections import defaultdict", "import itertools", "import functools"}
	n := 3 + g.r.IntN(5)
	for i := 0; i < n; i++ {
		g.line("%s", imports[g.r.IntN(len(imports))])
	}
	if torch {
		g.line("import torch")
		g.line("import torch.nn as nn")
		g.line("import torch.nn.functional as F")
	}
	g.line("")
	g.line("logger = logging.getLogger(__name__)")
	g.line("")
	g.line("DEFAULT_%s = %d", strings.ToUpper(g.word()), g.r.IntN(4096))
	if g.r.IntN(4) == 0 {
		g.line("_PATTERN = re.compile(r\"^[a-z_]+\\d*$\")")
	} else {
		g.line("_PATTERN = None")
	}
	g.line("")
}

func (g *gen) function() {
	name := g.word() + "_" + g.word()
	a, b := g.word(), g.word()
	g.line("")
	g.line("def %s(%s: List[Dict[str, Any]], %s: Optional[int] = None) -> Dict[str, Any]:", name, a, b)
	g.line(`    """Collect %s from %s, keyed by %s.`, g.word(), a, g.word())
	g.line("")
	g.line("    Items without a key are skipped; %s limits how many are read.", b)
	g.line(`    """`)
	g.line("    out: Dict[str, Any] = defaultdict(list)")
	g.line("    for i, item in enumerate(%s):", a)
	g.line("        if %s is not None and i >= %s:", b, b)
	g.line("            break")
	g.line("        key = item.get(%q)", g.word())
	g.line("        if not key or (_PATTERN is not None and not _PATTERN.match(str(key))):")
	g.line("            logger.debug(\"skipping %%r\", item)")
	g.line("            continue")
	switch g.r.IntN(4) {
	case 0:
		g.line("        out[key].append({k: v for k, v in item.items() if k != %q})", g.word())
	case 1:
		g.line("        out[key].append(json.loads(json.dumps(item)))")
	case 2:
		g.line("        out[key].extend(sorted(item.get(%q, []), key=lambda x: (len(str(x)), x)))", g.word())
	default:
		g.line("        out[key].append(math.floor(float(item.get(%q, 0)) * %d) / %d)", g.word(), 1+g.r.IntN(100), 1+g.r.IntN(100))
	}
	g.line("    return dict(out)")
}

func (g *gen) class(torch bool) {
	name := strings.ToUpper(g.word()[:1]) + g.word()[1:] + strings.ToUpper(g.word()[:1]) + g.word()[1:]
	if torch && g.r.IntN(2) == 0 {
		g.line("")
		g.line("class %s(nn.Module):", name)
		g.line(`    """A small %s block."""`, g.word())
		g.line("")
		g.line("    def __init__(self, dim: int = %d, hidden: int = %d, dropout: float = 0.%d) -> None:", 64*(1+g.r.IntN(8)), 128*(1+g.r.IntN(8)), g.r.IntN(5))
		g.line("        super().__init__()")
		g.line("        self.proj = nn.Linear(dim, hidden)")
		g.line("        self.out = nn.Linear(hidden, dim)")
		g.line("        self.norm = nn.LayerNorm(dim)")
		g.line("        self.drop = nn.Dropout(dropout)")
		g.line("")
		g.line("    def forward(self, x: torch.Tensor) -> torch.Tensor:")
		g.line("        h = F.gelu(self.proj(self.norm(x)))")
		g.line("        return x + self.drop(self.out(h))")
		return
	}
	g.line("")
	g.line("@dataclass")
	g.line("class %s:", name)
	g.line(`    """Holds %s %s state."""`, g.word(), g.word())
	g.line("")
	g.line("    name: str")
	g.line("    size: int = %d", g.r.IntN(1000))
	g.line("    tags: List[str] = field(default_factory=list)")
	g.line("")
	g.line("    def describe(self) -> str:")
	g.line("        return f\"{self.name} ({self.size}): {', '.join(self.tags)}\"")
	g.line("")
	g.line("    def save(self, path: Path) -> None:")
	g.line("        tmp = path.with_suffix(\".tmp\")")
	g.line("        tmp.write_text(json.dumps({\"name\": self.name, \"size\": self.size, \"tags\": self.tags}))")
	g.line("        os.replace(tmp, path)")
	g.line("")
	g.line("    @classmethod")
	g.line("    def load(cls, path: Path) -> \"%s\":", name)
	g.line("        data = json.loads(path.read_text())")
	g.line("        return cls(**data)")
}

func (g *gen) body(torch bool, target int) {
	for strings.Count(g.b.String(), "\n") < target {
		if g.r.IntN(3) == 0 {
			g.class(torch)
		} else {
			g.function()
		}
	}
}

// plainFile is ordinary Python; about one in five imports torch (models,
// layers) without any CUDA-specific call.
func (g *gen) plainFile() string {
	torch := g.r.IntN(5) == 0
	g.header(torch)
	g.body(torch, 40+g.r.IntN(200))
	g.line("")
	g.line("if __name__ == \"__main__\":")
	g.line("    print(%s_%s(json.load(sys.stdin)))", g.word(), g.word())
	return g.take()
}

// cudaFile is a training or inference module full of CUDA idioms: device
// strings, .cuda(), torch.cuda.* calls, AMP, DDP, events and memory stats.
func (g *gen) cudaFile() string {
	g.header(true)
	g.line("import argparse")
	g.line("import torch.distributed as dist")
	g.line("from torch.nn.parallel import DistributedDataParallel as DDP")
	g.line("")
	g.line("")
	g.line("def parse_args(argv=None):")
	g.line("    p = argparse.ArgumentParser()")
	g.line("    p.add_argument(\"--device\", default=\"cuda\")")
	g.line("    p.add_argument(\"--lr\", type=float, default=3e-4)")
	g.line("    p.add_argument(\"--steps\", type=int, default=%d)", 100*(1+g.r.IntN(50)))
	g.line("    return p.parse_args(argv)")
	g.body(true, 40+g.r.IntN(60))
	g.line("")
	g.line("")
	g.line("def setup(rank: int, world_size: int):")
	g.line("    dist.init_process_group(\"nccl\", rank=rank, world_size=world_size)")
	g.line("    torch.cuda.set_device(rank)")
	g.line("    return torch.device(f\"cuda:{rank}\")")
	g.line("")
	g.line("")
	g.line("def train(model, loader, args, rank=0):")
	g.line("    device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")")
	g.line("    model = model.cuda()")
	g.line("    model = DDP(model, device_ids=[rank])")
	g.line("    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)")
	g.line("    scaler = torch.cuda.amp.GradScaler()")
	g.line("    start = torch.cuda.Event(enable_timing=True)")
	g.line("    end = torch.cuda.Event(enable_timing=True)")
	g.line("    start.record()")
	g.line("    for step, (x, y) in enumerate(loader):")
	g.line("        x, y = x.to(device, non_blocking=True), y.cuda(non_blocking=True)")
	g.line("        with torch.cuda.amp.autocast():")
	g.line("            loss = F.cross_entropy(model(x), y)")
	g.line("        opt.zero_grad(set_to_none=True)")
	g.line("        scaler.scale(loss).backward()")
	g.line("        scaler.step(opt)")
	g.line("        scaler.update()")
	g.line("        if step %% %d == 0:", 10*(1+g.r.IntN(10)))
	g.line("            mem = torch.cuda.max_memory_allocated() / 2**20")
	g.line("            logger.info(\"step %%d loss %%.4f mem %%.1f MiB\", step, loss.item(), mem)")
	g.line("    end.record()")
	g.line("    torch.cuda.synchronize()")
	g.line("    logger.info(\"took %%.1f ms\", start.elapsed_time(end))")
	g.line("    torch.cuda.empty_cache()")
	g.line("    return model")
	g.line("")
	g.line("")
	g.line("def evaluate(model, batch):")
	g.line("    model.eval()")
	g.line("    with torch.no_grad():")
	g.line("        out = model(batch.to(\"cuda:0\"))")
	g.line("    return out.cpu()")
	return g.take()
}
