// mmcv carafe_naive's shape: a template over the floating type (AT_DISPATCH_FLOATING_TYPES_AND_HALF), whose tests
// launch it at double only (gradcheck). TPU kernels have no float64: the float32 instantiation, the one float32
// tensors run, is drafted and proven against the original at float, and the wiring keeps float64 on its own path.
// Each output element reassembles the k x k window of low-resolution features around it, weighted by its group's
// mask channels; window positions outside the feature map are skipped.
#include <torch/extension.h>

template <typename scalar_t>
__global__ void reassemble_kernel(const int nthreads, const scalar_t* feat, const scalar_t* mask, scalar_t* out,
                                  const int k, const int groups, const int up, const int channels, const int height,
                                  const int width) {
  for (int index = blockIdx.x * blockDim.x + threadIdx.x; index < nthreads; index += blockDim.x * gridDim.x) {
    const int x = index % width;
    const int y = (index / width) % height;
    const int c = (index / width / height) % channels;
    const int n = index / width / height / channels;
    const int group = c / (channels / groups);
    const int low_w = width / up, low_h = height / up;
    const int cx = x / up, cy = y / up, r = (k - 1) / 2;
    scalar_t acc = 0;
    for (int iy = cy - r; iy < cy + r + 1; iy++) {
      for (int ix = cx - r; ix < cx + r + 1; ix++) {
        if (iy < 0 || iy >= low_h || ix < 0 || ix >= low_w) {
          continue;
        }
        const int mc = (group * k + (iy - cy + r)) * k + (ix - cx + r);
        const scalar_t f = feat[((n * channels + c) * low_h + iy) * low_w + ix];
        const scalar_t m = mask[((n * k * k * groups + mc) * height + y) * width + x];
        acc += f * m;
      }
    }
    out[index] = acc;
  }
}

void reassemble(torch::Tensor feat, torch::Tensor mask, torch::Tensor out, int k, int groups, int up) {
  const int nthreads = out.numel();
  const int channels = out.size(1), height = out.size(2), width = out.size(3);
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(feat.scalar_type(), "reassemble", ([&] {
    reassemble_kernel<scalar_t><<<(nthreads + 511) / 512, 512>>>(
        nthreads, feat.data_ptr<scalar_t>(), mask.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), k, groups, up,
        channels, height, width);
  }));
}
