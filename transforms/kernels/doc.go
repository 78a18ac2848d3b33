// Package kernels finds custom CUDA kernels in a repository (.cu/.cuh files,
// load_inline/load sources, CUDAExtension sources, CuPy RawKernel/RawModule,
// Triton @triton.jit for inventory), parses them with the tree-sitter cpp
// grammar after masking CUDA keywords, isolates each __global__ kernel with
// its closure into a standalone translation unit, and infers a Spec from its
// launch sites.
//
// Entry points:
//
//	inv, problems := kernels.Discover(ctx, root, files) // files: repo-relative; nil walks root
//	k := inv.Lookup(id)                                  // or kernels.Find(ctx, root, id, nil)
//	k.Unit.Source, k.Unit.Entry                          // isolated TU and the kernel to launch
//	k.Spec, k.SpecStatus, k.Reason                       // inferred | user | needs-spec
//	kernels.LoadUserSpec(root, k), kernels.ParseUserSpec, kernels.ValidateSpec
//	kernels.Mask(src)                                    // CUDA masking for the cpp grammar
//	kernels.ParseExpr, kernels.Equivalent                // the spec's expression grammar
//
// Ids are "k-" and 10 hex digits of sha256(path + "#" + name) (KernelID):
// stable across runs and edits elsewhere. Problems carry PKN codes (PKN001
// found, PKN002 needs-spec, PKN003 unsupported construct, PKN004 bad user
// spec, PKN005 CUDA parse, PKN006 unresolved Python reference, PKN007 Triton
// inventory, PKN900 internal).
//
// Inference reads the host function around each launch: local bindings,
// macros, constexpr constants and single-return helpers are evaluated;
// tensor shapes come from numel()/size(i) bindings, TORCH_CHECK equalities
// and ranks, torch::empty({...}) and *_like aliases, and as a last resort
// from how the kernel indexes a pointer it bounds by a size parameter. Roles
// come from reads and writes in the kernel and the device functions it calls.
// When something cannot be followed the kernel is needs-spec with the reason;
// inference never guesses a shape the code does not state.
package kernels
