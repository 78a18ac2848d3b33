package validators

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pallasify/pallasify/transforms/pallas"
)

// wireChips is the TPU compile gate's per-chip record as the wired module's
// header writes it (nil when the gate did not run).
func wireChips(gate map[string]ChipCompile) map[string]pallas.ChipCompile {
	if len(gate) == 0 {
		return nil
	}
	out := make(map[string]pallas.ChipCompile, len(gate))
	for chip, c := range gate {
		out[chip] = pallas.ChipCompile{Compiled: c.Compiled, Error: c.Error, Sizes: c.Shape,
			BytesAccessed: c.BytesAccessed, RooflineS: c.RooflineS}
	}
	return out
}

// wireCases are the proven size assignments with their scalar values, one per
// assignment (the header of a wired module quotes one), in the verdict's order.
func wireCases(v *Verdict) []pallas.ValidatedCase {
	if !v.Proven() {
		return nil
	}
	var out []pallas.ValidatedCase
	seen := map[string]bool{}
	for _, c := range v.Cases {
		key := sizesKey(c.Sizes)
		if seen[key] || c.Scalars == nil {
			continue
		}
		seen[key] = true
		out = append(out, pallas.ValidatedCase{Sizes: c.Sizes, Scalars: c.Scalars})
	}
	return out
}

func sizesKey(s map[string]int64) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d,", k, s[k])
	}
	return b.String()
}
