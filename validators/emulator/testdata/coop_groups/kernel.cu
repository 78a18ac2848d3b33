// cooperative_groups thread blocks and tiles.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__global__ void cg_kernel(const int* __restrict__ x, int* __restrict__ tile_sum16, int* __restrict__ scan32,
                          int* __restrict__ block_sum, int* __restrict__ ranks) {
  cg::thread_block block = cg::this_thread_block();
  __shared__ int warp_tot[32];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = x[i];
  cg::thread_block_tile<16> t16 = cg::tiled_partition<16>(block);
  cg::thread_block_tile<32, cg::thread_block> warp = cg::tiled_partition<32>(block);
  tile_sum16[i] = cg::reduce(t16, v, cg::plus<int>());
  scan32[i] = cg::inclusive_scan(warp, v);
  int wmax = cg::reduce(warp, v, cg::greater<int>());
  if (warp.thread_rank() == 0) warp_tot[warp.meta_group_rank()] = cg::reduce(warp, v, cg::plus<int>());
  else cg::reduce(warp, v, cg::plus<int>());
  block.sync();
  if (block.thread_rank() == 0) {
    int s = 0;
    for (unsigned w = 0; w < warp.meta_group_size(); w++) s += warp_tot[w];
    block_sum[blockIdx.x] = s;
  }
  ranks[i] = (int)(t16.thread_rank() * 1000 + warp.meta_group_rank() * 10) + (wmax >= v) + (t16.any(v > 40) ? 100 : 0);
}
