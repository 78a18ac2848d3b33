package distributed

import (
	"bytes"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var backendMapExample = rule.Example{
	Before: `import torch.distributed as dist

BACKENDS = {"cuda": "nccl", "cpu": "gloo"}
dist.init_process_group(backend=BACKENDS[device.type])
`,
	Portable: `import torch.distributed as dist

BACKENDS = {"cuda": "nccl", "tpu": "tpu_dist", "cpu": "gloo"}
dist.init_process_group(backend=BACKENDS[device.type])
`,
	TPU: `import torch.distributed as dist

BACKENDS = {"cuda": "nccl", "tpu": "tpu_dist", "cpu": "gloo"}
dist.init_process_group(backend=BACKENDS[device.type])
`,
}

// BackendMap adds the tpu entry to a device-to-backend dict.
var BackendMap = &rule.Rule{
	Code:   "PDS003",
	Name:   "device-backend-map",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `nccl` (see Run).
	Needles: []string{"nccl"},
	Example: backendMapExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "A device-to-backend dict has no \"tpu\" entry",
		What: "Finds a dict literal that maps the device type `\"cuda\"` to the `\"nccl\"` process-group backend " +
			"(`{\"cuda\": \"nccl\", \"cpu\": \"gloo\"}`) and has no `\"tpu\"` key, and adds " +
			"`\"tpu\": \"tpu_dist\"` right after the CUDA entry, on both targets. A dict with `**` unpacking is " +
			"reported and left as it is.",
		Why: "Such a dict is looked up with the device type (`BACKENDS[device.type]`). Once the device rules make " +
			"that type `\"tpu\"` the lookup raises KeyError, or falls back to gloo through `.get`. TorchTPU's " +
			"collective backend is `\"tpu_dist\"` (`default_device_backend_map[\"tpu\"]`; " +
			"transformers' `distributed/utils.py` has the same entry).",
		Safety: "Safe: every existing key keeps its value; only a lookup with `\"tpu\"`, which failed or fell back " +
			"before, changes.",
	}, backendMapExample),
	Run: runBackendMap,
}

func runBackendMap(p *rule.Pass) {
	if !kit.Mentions(p.Src, "nccl") {
		return
	}
	kit.WalkHits(p, []string{"nccl"}, func(n *ts.Node) bool {
		if n.Type() == "comment" {
			return false
		}
		if n.Type() != "pair" {
			return true
		}
		k, kok := kit.PlainString(p, n.ChildByFieldName("key"))
		v, vok := kit.PlainString(p, n.ChildByFieldName("value"))
		dict := n.Parent()
		if !kok || !vok || k != "cuda" || v != "nccl" || dict == nil || dict.Type() != "dictionary" {
			return true
		}
		splat := false
		for _, c := range ts.Children(dict) {
			switch c.Type() {
			case "dictionary_splat":
				splat = true
			case "pair":
				if s, ok := kit.PlainString(p, c.ChildByFieldName("key")); ok && (s == "tpu" || s == "tpu_dist") {
					return false
				}
			}
		}
		f := kit.Finding(n, `device-to-backend dict without a "tpu" entry: a lookup with the TPU device type fails`, nil)
		if splat {
			f.Message += "; the dict unpacks another (**), which may hold one: add `\"tpu\": \"tpu_dist\"` where it belongs"
		} else {
			key := n.ChildByFieldName("key")
			q := p.Text(key)[len(p.Text(key))-1:]
			val := n.ChildByFieldName("value")
			vq := p.Text(val)[len(p.Text(val))-1:]
			entry := q + "tpu" + q + ": " + vq + "tpu_dist" + vq
			e := rule.Edit{Start: kit.End(n), End: kit.End(n), New: ", " + entry}
			if at, indent, ok := ownLine(p, n); ok {
				e = rule.Edit{Start: at, End: at, New: "\n" + indent + entry + ","}
			}
			f.Fix = &rule.Fix{Title: `Add "tpu": "tpu_dist"`, Safety: rule.Safe, Edits: []rule.Edit{e}}
		}
		kit.Report(p, f)
		return false
	})
}

// ownLine reports whether pair stands on its own line followed by a comma
// (one entry per line); at is the end of that comma, where the new entry's
// line goes, and indent the pair's indentation.
func ownLine(p *rule.Pass, pair *ts.Node) (at int, indent string, ok bool) {
	start := kit.Start(pair)
	ls := kit.LineStart(p.Src, start)
	if strings.TrimSpace(string(p.Src[ls:start])) != "" {
		return 0, "", false
	}
	comma := pair.NextSibling()
	if comma == nil || comma.Type() != "," {
		return 0, "", false
	}
	rest := p.Src[kit.End(comma):]
	if i := bytes.IndexByte(rest, '\n'); i < 0 || strings.TrimSpace(string(rest[:i])) != "" {
		return 0, "", false
	}
	return kit.End(comma), string(p.Src[ls:start]), true
}
