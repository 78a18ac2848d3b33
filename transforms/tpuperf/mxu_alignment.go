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

// mxuTile is the lane width of a TPU tile on every generation, and the
// MXU's edge on v5e (v6e's MXU is 256 wide).
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
		Why: "TPU arrays are stored in tiles whose minor dimension is 128 lanes, and the matrix units (MXU) " +
			"multiply 128×128 blocks on TPU v5e and 256×256 blocks on v6e (Trillium). XLA pads every matmul " +
			"dimension up to whole tiles, so the MXU does the work of the padded size: a 130-wide layer costs " +
			"as much as a 256-wide one (49% padding), a 1000-wide one as much as 1024 (2.3%). The share is what " +
			"padding can gain, and the message gives it: large for sizes just above a multiple of 128, small for " +
			"large sizes, where padding the vocabulary (50257 → 50304, 0.1%) is still the usual practice so that " +
			"the embedding, the output projection and the softmax all run on whole tiles. Pad the size in the " +
			"model: a vocabulary to the next multiple of 128 (the extra rows are never indexed, and the logits are " +
			"sliced back to the real vocabulary), hidden sizes by choosing a multiple, and a class head by padding " +
			"the output and slicing the logits. 128 is the alignment every generation needs; a multiple of 256 also " +
			"fills v6e's larger MXU.",
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
		p.Report(kit.Finding(call, fmt.Sprintf("%s %s: not a multiple of 128, the TPU's tile width (the MXU is 128 wide on v5e, "+
			"256 on v6e), and XLA pads each matmul to whole tiles; %s", short, strings.Join(bad, ", "), advice), nil))
	})
}
