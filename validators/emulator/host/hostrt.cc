// hostrt.cc — the pallasify host runtime (see hostrt.h). Built with
// -DPHR_TORCH it also wraps torch's CPU allocator so every tensor storage is
// a known allocation (base, size) that a kernel's pointer arguments resolve
// into.
#include "hostrt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#if defined(PHR_TORCH)
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#endif

namespace {

struct Alloc {
  size_t bytes;
  long long id;
  const char* origin;
};

struct State {
  std::mutex mu;
  std::map<uintptr_t, Alloc> live;
  long long next_id = 1;
  std::string dir;
  bool dir_read = false;
  int max_per_kernel = 4;
  size_t max_bytes = 256u << 20;
  int replay = 1;
  std::unordered_map<std::string, int> recorded;
  long long seq = 0;
  long long launches = 0;
  int last_error = 0;
  std::string last_msg;
};

State& st() {
  static State* s = new State;  // never destroyed: deleters may run at exit
  return *s;
}

void read_env(State& s) {
  if (s.dir_read) return;
  s.dir_read = true;
  if (const char* d = getenv("PALLASIFY_CAPTURE_DIR"); d && *d) {
    s.dir = d;
    mkdir(d, 0755);
  }
  if (const char* m = getenv("PALLASIFY_CAPTURE_MAX"); m && *m) s.max_per_kernel = atoi(m);
  if (const char* m = getenv("PALLASIFY_CAPTURE_MAX_BYTES"); m && *m) s.max_bytes = strtoull(m, nullptr, 10);
  if (const char* m = getenv("PALLASIFY_CAPTURE_REPLAY"); m && *m) s.replay = atoi(m);
}

}  // namespace

extern "C" {

int phr_alloc_find(const void* p, phr_alloc* out) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.mu);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = s.live.upper_bound(a);
  if (it == s.live.begin()) return 0;
  --it;
  if (a > it->first + it->second.bytes) return 0;
  if (a == it->first + it->second.bytes && it->second.bytes != 0) {
    // One past the end: the next allocation, if it starts here, owns it.
    return 0;
  }
  if (out) {
    out->base = reinterpret_cast<const void*>(it->first);
    out->bytes = it->second.bytes;
    out->id = it->second.id;
    out->origin = it->second.origin;
  }
  return 1;
}

void phr_alloc_add(const void* base, size_t bytes, const char* origin) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.mu);
  s.live[reinterpret_cast<uintptr_t>(base)] = Alloc{bytes, s.next_id++, origin};
}

void phr_alloc_remove(const void* base) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.mu);
  s.live.erase(reinterpret_cast<uintptr_t>(base));
}

void* phr_malloc(size_t bytes, const char* origin) {
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0) return nullptr;
  phr_alloc_add(p, bytes, origin);
  return p;
}

void phr_free(void* p) {
  if (!p) return;
  phr_alloc_remove(p);
  free(p);
}

long long phr_capture_begin(const char* kernel) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.mu);
  read_env(s);
  s.launches++;
  if (s.dir.empty()) return -1;
  int& n = s.recorded[kernel];
  if (n >= s.max_per_kernel) return -1;
  n++;
  return s.seq++;
}

int phr_capture_file(const char* name, const void* data, size_t n) {
  State& s = st();
  std::string path;
  {
    std::lock_guard<std::mutex> g(s.mu);
    read_env(s);
    if (s.dir.empty()) return -1;
    path = s.dir + "/" + name;
  }
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) return -1;
  size_t w = n ? fwrite(data, 1, n, f) : 0;
  int rc = fclose(f);
  return (w == n && rc == 0) ? 0 : -1;
}

void phr_capture_record(const char* json) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.mu);
  read_env(s);
  if (s.dir.empty()) return;
  std::string path = s.dir + "/launches.jsonl";
  FILE* f = fopen(path.c_str(), "ab");
  if (!f) return;
  fputs(json, f);
  fputc('\n', f);
  fclose(f);
}

size_t phr_capture_max_bytes(void) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.mu);
  read_env(s);
  return s.max_bytes;
}

int phr_capture_replay(void) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.mu);
  read_env(s);
  return s.replay;
}

long long phr_launches(void) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.mu);
  return s.launches;
}

long long phr_capture_next_seq(void) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.mu);
  return s.seq;
}

void phr_set_error(int code, const char* msg) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.mu);
  if (s.last_error == 0) {
    s.last_error = code;
    s.last_msg = msg ? msg : "";
  }
}

int phr_get_error(int clear) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.mu);
  int e = s.last_error;
  if (clear) s.last_error = 0;
  return e;
}

const char* phr_error_message(void) {
  State& s = st();
  std::lock_guard<std::mutex> g(s.mu);
  return s.last_msg.c_str();
}

}  // extern "C"

#if defined(PHR_TORCH)
namespace {

// TrackingAllocator forwards to torch's CPU allocator and records each
// storage as a live allocation until its deleter runs. The DataPtr's
// context is the data pointer itself (raw_allocate requires it: oneDNN and
// other CPU paths use the raw interface); the inner DataPtr waits in a map.
struct TrackingAllocator final : c10::Allocator {
  c10::Allocator* base = nullptr;

  static std::mutex& mu() {
    static std::mutex* m = new std::mutex;
    return *m;
  }
  static std::unordered_map<void*, c10::DataPtr>& inner() {
    static auto* m = new std::unordered_map<void*, c10::DataPtr>;
    return *m;
  }

  static void release(void* p) {
    phr_alloc_remove(p);
    c10::DataPtr d;
    {
      std::lock_guard<std::mutex> g(mu());
      auto it = inner().find(p);
      if (it == inner().end()) return;
      d = std::move(it->second);
      inner().erase(it);
    }
    // d frees the storage when it goes out of scope.
  }

  c10::DataPtr allocate(size_t n) override {
    c10::DataPtr d = base->allocate(n);
    void* p = d.get();
    if (!p) return d;
    phr_alloc_add(p, n, "torch");
    {
      std::lock_guard<std::mutex> g(mu());
      inner()[p] = std::move(d);
    }
    return c10::DataPtr(p, p, &release, c10::Device(c10::DeviceType::CPU));
  }

  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }
};

struct Install {
  Install() {
    static TrackingAllocator a;
    a.base = c10::GetCPUAllocator();
    c10::SetCPUAllocator(&a, /*priority=*/100);
  }
};
Install install_tracking_allocator;

}  // namespace
#endif
