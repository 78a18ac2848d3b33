package tpuperf

import (
	"fmt"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var mxuExample = rule.Example{
	Before: `from torch import nn

wte = nn.Embedding(50257, 768)
head = nn.Linear(768, 1000)
`,
}

// mxuTile is the MXU's tile edge on TPU v5e, v6e and TPU7x.
const mxuTile = 128

// mxuLayer names the size parameters of one layer class, in positional
// order.
type mxuLayer struct {
	params []string
}

// mxuLayers are the torch.nn layers whose sizes become matmul dimensions.
var mxuLayers = map[string]mxuLayer{
	"torch.nn.Linear":             {[]string{"in_features", "out_features"}},
	"torch.nn.LazyLinear":         {[]string{"out_features"}},
	"torch.nn.Bilinear":           {[]string{"in1_features", "in2_features", "out_features"}},
	"torch.nn.Embedding":          {[]string{"num_embeddings", "embedding_dim"}},
	"torch.nn.EmbeddingBag":       {[]string{"num_embeddings", "embedding_dim"}},
	"torch.nn.MultiheadAttention": {[]string{"embed_dim"}},
}

// MXUAlignment reports literal layer sizes that are not multiples of 128.
var MXUAlignment = &rule.Rule{
	Code:   "PTP003",
	Name:   "mxu-unaligned-size",
	Family: Family,
	Safety: rule.DisplayOnly,
	// A finding is a call qualified as torch.nn.<class>, whose class name is
	// source text in the call or in the import that binds it.
	Needles: []string{"Linear", "Embedding", "MultiheadAttention"},
	Example: mxuExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "Linear, embedding or attention size that is not a multiple of 128",
		What: "Reports `nn.Linear`, `nn.LazyLinear`, `nn.Bilinear`, `nn.Embedding`, `nn.EmbeddingBag` and " +
			"`nn.MultiheadAttention` calls whose size arguments (features, vocabulary size, embedding or attention " +
			"width) are integer literals of at least 128 that are not multiples of 128, and names the next " +
			"multiple and how much of the padded size is padding (50257 → 50304 is 0.1%, 130 → 256 is 49%), " +
			"which says what padding can gain. Sizes given by variables or expressions are not reported (their value is not in the file), " +
			"and neither are sizes below 128: such a layer fits in one tile whatever its size, and padding a " +
			"10-class head to 128 would multiply its work instead of filling a tile.",
		Why: "The TPU's matrix unit (MXU) works on 128×128 tiles on TPU v5e, v6e and TPU7x. XLA pads every matmul " +
			"dimension up to whole tiles, so a 1000-wide layer costs as many MXU passes as a 1024-wide one and " +
			"leaves the last tile partly empty, and a 50257-row vocabulary wastes most of its last tile in the " +
			"output projection of every step. Sizes that are multiples of 128 keep every tile full. Pad the size in " +
			"the model: a vocabulary to the next multiple of 128 (50257 → 50304; the extra rows are never indexed, " +
			"and the logits are sliced back to the real vocabulary), hidden sizes by choosing a multiple, and a " +
			"class head by padding the output and slicing the logits.",
		Safety: "Diagnostic only: a new size changes parameter shapes, so checkpoints no longer load as they are, " +
			"and padded outputs must be sliced or masked; where the size is fixed by a dataset or a pretrained " +
			"checkpoint the finding is advice, not a bug.",
	}, mxuExample),
	Run: runMXUAlignment,
}

// roundUp is n rounded up to a multiple of m.
func roundUp(n, m int) int { return (n + m - 1) / m * m }

func runMXUAlignment(p *rule.Pass) {
	kit.Calls(p, func(call *ts.Node) {
		name := kit.CallName(p, call)
		layer, ok := mxuLayers[name]
		if !ok {
			return
		}
		al, ok := kit.Arguments(p, call)
		if !ok {
			return
		}
		var bad []string
		for i, param := range layer.params {
			v := al.KwValue(param)
			if v == nil && i < len(al.Positional) {
				v = al.Positional[i]
			}
			n, lit := kit.Int(p, v)
			if !lit || n < mxuTile || n%mxuTile == 0 {
				continue
			}
			up := roundUp(n, mxuTile)
			bad = append(bad, fmt.Sprintf("%s=%d (pad to %d; %.1f%% of its tiles is padding)", param, n, up,
				float64(up-n)*100/float64(up)))
		}
		if len(bad) == 0 {
			return
		}
		short := name[strings.LastIndexByte(name, '.')+1:]
		advice := "pad the size to a multiple of 128 and slice or mask what the padding adds"
		if strings.HasPrefix(short, "Embedding") {
			advice = "pad the vocabulary to a multiple of 128 (the extra rows are never indexed; slice the logits " +
				"back to the real vocabulary)"
		}
		p.Report(kit.Finding(call, fmt.Sprintf("%s %s: not a multiple of 128, the TPU MXU tile (v5e, v6e, TPU7x), so "+
			"XLA pads each matmul to whole tiles; %s", short, strings.Join(bad, ", "), advice), nil))
	})
}
