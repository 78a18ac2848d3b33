// hostrt.h — the C ABI of the pallasify host runtime (hostrt.cc): the state
// every CPU-built extension module of one process shares (live allocations,
// the capture directory and its launch counters, the last CUDA error). It is
// one shared library (libpallasify_hostrt.so) loaded once per process, or
// linked into a standalone program.
#ifndef PALLASIFY_HOSTRT_H
#define PALLASIFY_HOSTRT_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// One live allocation: a torch CPU storage (origin "torch"), a cudaMalloc'd
// buffer ("cudaMalloc"), or pinned/managed host memory ("host").
typedef struct phr_alloc {
  const void* base;
  size_t bytes;
  long long id;
  const char* origin;
} phr_alloc;

// phr_alloc_find resolves p to the allocation it points into (p may equal the
// end of a zero-length tail); 1 when found.
int phr_alloc_find(const void* p, phr_alloc* out);
void phr_alloc_add(const void* base, size_t bytes, const char* origin);
void phr_alloc_remove(const void* base);

// cudaMalloc-style allocations (256-byte aligned, tracked).
void* phr_malloc(size_t bytes, const char* origin);
void phr_free(void* p);

// phr_capture_begin counts a launch of kernel and returns its sequence number
// when it is to be recorded (a capture directory is set and fewer than the
// per-kernel maximum were recorded), else -1.
long long phr_capture_begin(const char* kernel);
// phr_capture_file writes bytes as <dir>/<name>; 0 on success.
int phr_capture_file(const char* name, const void* data, size_t n);
// phr_capture_record appends one JSON line to <dir>/launches.jsonl.
void phr_capture_record(const char* json);
// Limits of a recorded launch: bytes of contents per launch, and whether the
// poisoned replay that tells outputs from inouts runs.
size_t phr_capture_max_bytes(void);
int phr_capture_replay(void);
// phr_launches returns how many launches were seen (recorded or not);
// phr_capture_next_seq the sequence number the next recorded launch gets.
long long phr_launches(void);
long long phr_capture_next_seq(void);

// The sticky last error of the CUDA runtime emulation.
void phr_set_error(int code, const char* msg);
int phr_get_error(int clear);
const char* phr_error_message(void);

#ifdef __cplusplus
}
#endif
#endif  // PALLASIFY_HOSTRT_H
