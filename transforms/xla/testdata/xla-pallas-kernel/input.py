from torch_xla.experimental.custom_kernel import make_kernel_from_pallas

add = make_kernel_from_pallas(add_kernel, lambda x, y: [(x.shape, x.dtype)])  # want "PXL006: .*jax_op"
