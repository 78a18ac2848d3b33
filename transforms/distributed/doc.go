// Package distributed holds the torch.distributed rules: the NCCL process
// group backend and DistributedDataParallel's CUDA device ids.
//
// Targets: portable picks the backend from DEVICE.type at run time ("nccl" on
// CUDA, "tpu_dist" on TorchTPU, "gloo" elsewhere) and passes device ids only
// on CUDA; tpu uses the "tpu_dist" backend and no device ids.
package distributed

import "github.com/pallasify/pallasify/transforms/rule"

// Family is the family name of these rules.
const Family = "distributed"

// Rules is the distributed family, in registry order.
var Rules = []*rule.Rule{NcclBackend, DDPDeviceIDs, BackendMap, NcclBackendCheck}
