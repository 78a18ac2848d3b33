// ATen/cuda/Atomic.cuh — emulator shim (validators/emulator/host): the names it declares come from cudaemu_host.h, force-included before every translation unit of a host build.
#pragma once
#include "cudaemu_host.h"
#if !defined(CUDAEMU_HOST_TORCH)
#error "cudaemu: unsupported construct: #include <ATen/cuda/Atomic.cuh> outside a torch extension build"
#endif
