// cuda_profiler_api.h — emulator shim (validators/emulator/host): the names it declares come from cudaemu_host.h, force-included before every translation unit of a host build.
#pragma once
#include "cudaemu_host.h"
