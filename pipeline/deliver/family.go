package deliver

import (
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/pipeline"
)

// Family is one commit's worth of a run: the rewrites of one kind.
type Family struct {
	Key     string // stable id: device, huggingface, compile, kernel:<name>, other
	Subject string // the commit subject, without the "pallasify: " prefix
	Order   int
}

// families is THE mapping from rule codes and names to commit families. A
// diagnostic belongs to the first family whose code prefixes or rule-name
// keywords match; generated files (kernel modules) form one family per
// kernel. Keep this table the only place that knows it.
var families = []struct {
	Family
	prefixes []string // code prefixes
	keywords []string // substrings of the rule name
}{
	{Family{Key: "huggingface", Subject: "place Hugging Face models on the TPU device", Order: 2},
		[]string{"PHF"}, []string{"hf-", "hugging", "device-map", "device_map", "from-pretrained"}},
	{Family{Key: "compile", Subject: "tune torch.compile for TPU", Order: 3},
		[]string{"PCM"}, []string{"compile"}},
	{Family{Key: "device", Subject: "rewrite CUDA device code for TPU", Order: 1},
		// PDV device strings and .cuda(), PCU torch.cuda.* APIs, PAM AMP, PDS distributed.
		[]string{"PDV", "PCU", "PAM", "PDS"}, []string{"device", "cuda", "amp", "autocast", "scaler", "distributed", "nccl", "ddp"}},
	{Family{Key: "markers", Subject: "mark the sites left to a human", Order: 6},
		// PDX: diagnostic-only hazards; their only edits are --mark comments.
		[]string{"PDX"}, nil},
}

var otherFamily = Family{Key: "other", Subject: "other TPU rewrites", Order: 5}

// familyOf returns the family of one applied diagnostic.
func familyOf(d pipeline.Diagnostic) Family {
	code := strings.ToUpper(d.Code)
	for _, f := range families {
		for _, p := range f.prefixes {
			if strings.HasPrefix(code, p) {
				return f.Family
			}
		}
	}
	name := strings.ToLower(d.Rule)
	for _, f := range families {
		for _, k := range f.keywords {
			if name != "" && strings.Contains(name, k) {
				return f.Family
			}
		}
	}
	return otherFamily
}

// kernelFamily is the family of a generated kernel module. Kernel modules
// come first: the call sites other families rewrite import them.
func kernelFamily(name string) Family {
	return Family{Key: "kernel:" + name, Subject: "add proven Pallas kernel " + name, Order: 0}
}

// opsFamily holds the generated _pallas_ops modules that register every
// proven kernel of a directory with TorchTPU; they import the kernels'
// modules, and the call sites import them.
var opsFamily = Family{Key: "kernel-ops", Subject: "register the proven Pallas kernels with TorchTPU", Order: 0}

// benchFamily holds the benchmark script a --bench run writes
// (Run.Bench): last, it depends on nothing the other commits change.
var benchFamily = Family{Key: "bench", Subject: "add a benchmark of the model's step (pallasify_bench.py)", Order: 7}

// opsModule is the base name of the generated registration module.
const opsModule = "_pallas_ops"

// Group is the files one commit holds.
type Group struct {
	Family
	Files []*pipeline.File
	Codes []string // rule codes of the applied diagnostics, sorted, unique
}

// GroupFiles assigns every changed file to one family and returns the groups
// in commit order. A file is committed whole, so a file touched by several
// families goes to the family with the most applied diagnostics in it (ties:
// the earlier family). Generated files are kernel modules: one group per
// kernel, named by the kernel whose Draft.Module is the file, else by the
// file's base name.
func GroupFiles(run *pipeline.Run) []Group {
	kernelOf := map[string]string{}
	for _, k := range run.Kernels {
		if k.Draft != nil && k.Draft.Module != "" {
			kernelOf[k.Draft.Module] = k.Name
		}
	}
	byKey := map[string]*Group{}
	add := func(fam Family, f *pipeline.File, codes map[string]bool) {
		g := byKey[fam.Key]
		if g == nil {
			g = &Group{Family: fam}
			byKey[fam.Key] = g
		}
		g.Files = append(g.Files, f)
		for c := range codes {
			g.Codes = append(g.Codes, c)
		}
	}
	for _, f := range run.Files {
		if !f.Changed() {
			continue
		}
		codes := map[string]bool{}
		count := map[string]int{}
		famByKey := map[string]Family{}
		for _, d := range f.Diagnostics {
			if !d.Applied {
				continue
			}
			fam := familyOf(d)
			count[fam.Key]++
			famByKey[fam.Key] = fam
			codes[d.Code] = true
		}
		var fam Family
		switch {
		case f.Generated && f.Path == run.Bench:
			fam = benchFamily
		case f.Generated && strings.TrimSuffix(path.Base(f.Path), path.Ext(f.Path)) == opsModule:
			fam = opsFamily
		case f.Generated:
			name := kernelOf[f.Path]
			if name == "" {
				name = strings.TrimSuffix(path.Base(f.Path), path.Ext(f.Path))
			}
			fam = kernelFamily(name)
		case len(count) == 0:
			fam = otherFamily
		default:
			best := -1
			for k, n := range count {
				c := famByKey[k]
				if n > best || (n == best && c.Order < fam.Order) {
					fam, best = c, n
				}
			}
		}
		add(fam, f, codes)
	}
	out := make([]Group, 0, len(byKey))
	for _, g := range byKey {
		sort.Strings(g.Codes)
		g.Codes = uniq(g.Codes)
		sort.Slice(g.Files, func(i, j int) bool { return g.Files[i].Path < g.Files[j].Path })
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Order != out[j].Order {
			return out[i].Order < out[j].Order
		}
		return out[i].Key < out[j].Key
	})
	return importOrder(out)
}

// importRE finds the generated modules a Python file imports: "import
// _pallas_x", "from . import _pallas_x", "from ._pallas_x import f",
// "from pkg import _pallas_x".
var importRE = regexp.MustCompile(`(?m)^[ \t]*(?:from[ \t]+[.\w]*?\.?(_pallas_\w+)[ \t]+import\b|(?:from[ \t]+[.\w]+[ \t]+)?import[ \t]+(_pallas_\w+))`)

// importOrder reorders groups (kept in their order otherwise) so that every
// commit can be imported: a group comes after each group holding a
// generated module one of its files imports. Each commit then holds the
// modules its own call sites use (kernel modules, then their
// registrations, then the rewritten callers).
func importOrder(groups []Group) []Group {
	provider := map[string]int{} // "dir/_pallas_x" → group index
	for i, g := range groups {
		for _, f := range g.Files {
			if f.Generated && strings.HasSuffix(f.Path, ".py") {
				provider[strings.TrimSuffix(f.Path, ".py")] = i
			}
		}
	}
	deps := make([]map[int]bool, len(groups))
	for i, g := range groups {
		deps[i] = map[int]bool{}
		for _, f := range g.Files {
			dir := path.Dir(f.Path)
			for _, m := range importRE.FindAllSubmatch(f.Updated, -1) {
				name := string(m[1]) + string(m[2])
				if j, ok := provider[path.Join(dir, name)]; ok && j != i {
					deps[i][j] = true
				}
			}
		}
	}
	placed := make([]bool, len(groups))
	out := make([]Group, 0, len(groups))
	for len(out) < len(groups) {
		progress := false
		for i := range groups {
			if placed[i] {
				continue
			}
			ready := true
			for j := range deps[i] {
				ready = ready && placed[j]
			}
			if ready {
				placed[i], progress = true, true
				out = append(out, groups[i])
				break // restart: keep the original order among the ready
			}
		}
		if !progress { // an import cycle: keep the rest as they were
			for i := range groups {
				if !placed[i] {
					placed[i] = true
					out = append(out, groups[i])
				}
			}
		}
	}
	return out
}

func uniq(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
