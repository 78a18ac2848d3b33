// Package tpuperf holds the TPU findings (codes PTP…): code that runs on
// TorchTPU but computes differently or slowly there, or that sets up
// processes and sharding the GPU way — float32 matmul precision, shapes
// that recompile a static-shape graph, matrix sizes that leave MXU tiles
// partly empty, FSDP and process-group settings made for CUDA and NCCL,
// and several processes aimed at one chip.
//
// Most rules are diagnostic: what to do depends on numerics, data and
// launch scripts the file does not show, so pallasify reports them (and
// with --mark leaves a "# pallasify: PTPnnn …" comment) with the TPU fact
// and the call that keeps the behaviour. Both targets see the same
// findings. Each rule's page states the TorchTPU fact it relies on; the
// family's README.md lists the rules and how often each fires on real
// repositories.
package tpuperf

import "github.com/pallasify/pallasify/transforms/rule"

// Family is the family name shown in rule listings.
const Family = "tpuperf"

// Rules is the family in registry order.
var Rules = []*rule.Rule{
	MatmulPrecision,
	VaryingShapes,
	MXUAlignment,
	DeviceIDRank,
	NCCLOptions,
	SpawnPerDevice,
	DeviceInDataWorker,
}
