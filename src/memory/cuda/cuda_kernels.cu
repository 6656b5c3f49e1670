// Kernels of the CUDA memory kind: reduce, fill exact inputs, count wrong
// elements. All three are memory-bound, so each thread moves 16 bytes per
// load/store (uint4), with a scalar pass for the elements before the first
// 16-byte boundary and after the last whole vector. Grids are capped at what
// the GPU holds resident and loop (grid-stride) beyond that.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "cuda_kernels.h"
#include "memory/exact_inputs.h"
#include "memory/payload_pattern.h"

namespace gdr::cuda {
namespace {

// Where the vectors are: `head` scalars, then `nvec` 16-byte vectors, then
// scalars from `tail` to n.
struct Split {
  std::size_t head, nvec, tail, n;
  __device__ std::size_t scalars() const { return head + (n - tail); }
  __device__ std::size_t scalar_index(std::size_t j) const {
    return j < head ? j : tail + (j - head);
  }
};

// `aligned` false forces the all-scalar path (dst and src misaligned differently).
Split split(const void* p, std::size_t n, std::size_t elem, bool aligned) {
  const std::size_t per_vec = 16 / elem;
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  if (!aligned || addr % elem != 0) return {n, 0, n, n};
  std::size_t head = addr % 16 == 0 ? 0 : (16 - addr % 16) / elem;
  if (head > n) head = n;
  std::size_t nvec = (n - head) / per_vec;
  return {head, nvec, head + nvec * per_vec, n};
}

int blocks_for(const Split& s, int max_blocks) {
  std::size_t work = s.nvec > s.head + (s.n - s.tail) ? s.nvec : s.head + (s.n - s.tail);
  std::size_t b = (work + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  return b > static_cast<std::size_t>(max_blocks) ? max_blocks : static_cast<int>(b);
}

__device__ inline std::size_t thread_id() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t grid_stride() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

// The arithmetic type of each element type: half and bfloat16 go through
// float with one rounding per step, exactly like the host loops.
template <typename T> struct Arith {
  using C = T;
  __device__ static C up(T v) { return v; }
  __device__ static T down(C c) { return c; }
};
template <> struct Arith<__half> {
  using C = float;
  __device__ static C up(__half v) { return __half2float(v); }
  __device__ static __half down(C c) { return __float2half_rn(c); }
};
template <> struct Arith<__nv_bfloat16> {
  using C = float;
  __device__ static C up(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 down(C c) { return __float2bfloat16_rn(c); }
};

// Same expressions as std::min/std::max on the host, so ties and signed
// zeros come out alike.
template <Op O, typename C> __device__ inline C apply(C a, C b) {
  if constexpr (O == Op::sum) return a + b;
  else if constexpr (O == Op::prod) return a * b;
  else if constexpr (O == Op::min) return b < a ? b : a;
  else return a < b ? b : a;
}

template <typename T, Op O>
__global__ void __launch_bounds__(kThreads)
    reduce_kernel(T* __restrict__ dst, const T* __restrict__ src, Split s) {
  using A = Arith<T>;
  constexpr int V = 16 / sizeof(T);
  auto* vd = reinterpret_cast<uint4*>(dst + s.head);
  auto* vs = reinterpret_cast<const uint4*>(src + s.head);
  for (std::size_t v = thread_id(); v < s.nvec; v += grid_stride()) {
    uint4 a = vd[v];
    uint4 b = __ldg(vs + v);
    T* ea = reinterpret_cast<T*>(&a);
    const T* eb = reinterpret_cast<const T*>(&b);
#pragma unroll
    for (int k = 0; k < V; ++k) ea[k] = A::down(apply<O>(A::up(ea[k]), A::up(eb[k])));
    vd[v] = a;
  }
  for (std::size_t j = thread_id(); j < s.scalars(); j += grid_stride()) {
    std::size_t i = s.scalar_index(j);
    dst[i] = A::down(apply<O>(A::up(dst[i]), A::up(src[i])));
  }
}

// Fills only need the element's bits, so one kernel per element size.
template <typename W> struct Table {
  W v[exact::kPeriod];
};

template <typename W>
__global__ void __launch_bounds__(kThreads) fill_kernel(W* __restrict__ dst, Split s, Table<W> tab, int it) {
  constexpr int V = 16 / sizeof(W);
  auto* vd = reinterpret_cast<uint4*>(dst + s.head);
  for (std::size_t v = thread_id(); v < s.nvec; v += grid_stride()) {
    alignas(16) W e[V];
    const std::size_t first = s.head + v * V;
#pragma unroll
    for (int k = 0; k < V; ++k) e[k] = tab.v[exact::phase(first + k, it)];
    vd[v] = *reinterpret_cast<const uint4*>(e);
  }
  for (std::size_t j = thread_id(); j < s.scalars(); j += grid_stride()) {
    std::size_t i = s.scalar_index(j);
    dst[i] = tab.v[exact::phase(i, it)];
  }
}

template <typename T> __device__ inline double to_double(T v) { return static_cast<double>(v); }
template <> __device__ inline double to_double<__half>(__half v) { return __half2float(v); }
template <> __device__ inline double to_double<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    count_kernel(const T* __restrict__ buf, Split s, ExpectedTable tab, int it,
                 unsigned long long* out) {
  constexpr int V = 16 / sizeof(T);
  unsigned long long wrong = 0;
  auto* vb = reinterpret_cast<const uint4*>(buf + s.head);
  for (std::size_t v = thread_id(); v < s.nvec; v += grid_stride()) {
    uint4 a = __ldg(vb + v);
    const T* e = reinterpret_cast<const T*>(&a);
    const std::size_t first = s.head + v * V;
#pragma unroll
    for (int k = 0; k < V; ++k) wrong += to_double(e[k]) != tab.v[exact::phase(first + k, it)];
  }
  for (std::size_t j = thread_id(); j < s.scalars(); j += grid_stride()) {
    std::size_t i = s.scalar_index(j);
    wrong += to_double(buf[i]) != tab.v[exact::phase(i, it)];
  }
  // One atomic per warp, not per element.
  for (int o = 16; o > 0; o >>= 1) wrong += __shfl_down_sync(0xffffffffu, wrong, o);
  if ((threadIdx.x & 31) == 0 && wrong) atomicAdd(out, wrong);
}

// Calls f(T{}) with a value of the device element type of t (C++17: the
// CMake versions we support know no C++20 flags for nvcc).
template <typename F> cudaError_t with_type(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::i32: return f(std::int32_t{});
    case DType::i64: return f(std::int64_t{});
    case DType::f16: return f(__half{});
    case DType::bf16: return f(__nv_bfloat16{});
  }
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t reduce_typed(T* dst, const T* src, std::size_t n, Op op, Launch l) {
  const auto d = reinterpret_cast<std::uintptr_t>(dst), s = reinterpret_cast<std::uintptr_t>(src);
  Split sp = split(dst, n, sizeof(T), d % 16 == s % 16);
  const int blocks = blocks_for(sp, l.max_blocks);
  switch (op) {
    case Op::sum: reduce_kernel<T, Op::sum><<<blocks, kThreads, 0, l.stream>>>(dst, src, sp); break;
    case Op::prod: reduce_kernel<T, Op::prod><<<blocks, kThreads, 0, l.stream>>>(dst, src, sp); break;
    case Op::min: reduce_kernel<T, Op::min><<<blocks, kThreads, 0, l.stream>>>(dst, src, sp); break;
    case Op::max: reduce_kernel<T, Op::max><<<blocks, kThreads, 0, l.stream>>>(dst, src, sp); break;
  }
  return cudaGetLastError();
}

template <typename W>
cudaError_t fill_sized(void* dst, std::size_t n, const InputTable& tab, int it, Launch l) {
  Table<W> t;
  for (int p = 0; p < exact::kPeriod; ++p)
    t.v[p] = reinterpret_cast<const W*>(tab.bytes)[p];
  Split sp = split(dst, n, sizeof(W), true);
  fill_kernel<W><<<blocks_for(sp, l.max_blocks), kThreads, 0, l.stream>>>(static_cast<W*>(dst), sp, t, it);
  return cudaGetLastError();
}

// Slot y of the launch is the `bytes` at dst + y * bytes, with seed
// seeds.s[y]: one launch fills or checks a whole window of messages.
// One thread per 8-byte word of a slot; whole-word accesses where the slot
// starts on an 8-byte boundary (slots of odd sizes may not).
__global__ void __launch_bounds__(kThreads)
    pattern_fill_kernel(unsigned char* __restrict__ base, std::size_t bytes, PatternSeeds seeds) {
  unsigned char* dst = base + blockIdx.y * bytes;
  const std::uint64_t seed = seeds.s[blockIdx.y];
  const bool aligned = reinterpret_cast<std::uintptr_t>(dst) % 8 == 0;
  for (std::size_t w = thread_id(); w * 8 < bytes; w += grid_stride()) {
    const std::uint64_t v = pattern::word(seed, w);
    if (aligned && w * 8 + 8 <= bytes) {
      reinterpret_cast<std::uint64_t*>(dst)[w] = v;
      continue;
    }
    for (std::size_t i = w * 8; i < w * 8 + 8 && i < bytes; ++i)
      dst[i] = static_cast<unsigned char>(v >> ((i & 7u) * 8u));
  }
}

__global__ void __launch_bounds__(kThreads)
    pattern_count_kernel(const unsigned char* __restrict__ base, std::size_t bytes, PatternSeeds seeds,
                         unsigned long long* out) {
  const unsigned char* buf = base + blockIdx.y * bytes;
  const std::uint64_t seed = seeds.s[blockIdx.y];
  const bool aligned = reinterpret_cast<std::uintptr_t>(buf) % 8 == 0;
  unsigned long long wrong = 0;
  for (std::size_t w = thread_id(); w * 8 < bytes; w += grid_stride()) {
    const std::uint64_t v = pattern::word(seed, w);
    if (aligned && w * 8 + 8 <= bytes) {
      std::uint64_t x = __ldg(reinterpret_cast<const unsigned long long*>(buf) + w) ^ v;
      for (int k = 0; k < 8; ++k) wrong += ((x >> (8 * k)) & 0xffu) != 0;
      continue;
    }
    for (std::size_t i = w * 8; i < w * 8 + 8 && i < bytes; ++i)
      wrong += buf[i] != static_cast<unsigned char>(v >> ((i & 7u) * 8u));
  }
  for (int o = 16; o > 0; o >>= 1) wrong += __shfl_down_sync(0xffffffffu, wrong, o);
  if ((threadIdx.x & 31) == 0 && wrong) atomicAdd(out, wrong);
}

// Blocks per slot: enough for one word per thread, the launch as a whole
// within max_blocks (but at least one block per slot).
dim3 pattern_grid(std::size_t bytes, int slots, int max_blocks) {
  std::size_t b = ((bytes + 7) / 8 + kThreads - 1) / kThreads;
  const std::size_t most = std::max<std::size_t>(1, static_cast<std::size_t>(max_blocks) / slots);
  return dim3(static_cast<unsigned>(std::clamp<std::size_t>(b, 1, most)), static_cast<unsigned>(slots));
}

}  // namespace

cudaError_t launch_fill_pattern(void* dst, std::size_t bytes, const PatternSeeds& seeds, Launch l) {
  if (bytes == 0 || seeds.n == 0) return cudaSuccess;
  pattern_fill_kernel<<<pattern_grid(bytes, seeds.n, l.max_blocks), kThreads, 0, l.stream>>>(
      static_cast<unsigned char*>(dst), bytes, seeds);
  return cudaGetLastError();
}

cudaError_t launch_count_wrong_pattern(const void* buf, std::size_t bytes, const PatternSeeds& seeds,
                                       unsigned long long* d_counter, Launch l) {
  if (bytes == 0 || seeds.n == 0) return cudaSuccess;
  pattern_count_kernel<<<pattern_grid(bytes, seeds.n, l.max_blocks), kThreads, 0, l.stream>>>(
      static_cast<const unsigned char*>(buf), bytes, seeds, d_counter);
  return cudaGetLastError();
}

cudaError_t launch_reduce(void* dst, const void* src, std::size_t count, DType t, Op op, Launch l) {
  if (count == 0) return cudaSuccess;
  return with_type(t, [&](auto tag) {
    using T = decltype(tag);
    return reduce_typed(static_cast<T*>(dst), static_cast<const T*>(src), count, op, l);
  });
}

cudaError_t launch_fill(void* dst, std::size_t count, std::size_t elem_size, const InputTable& tab,
                        int it, Launch l) {
  if (count == 0) return cudaSuccess;
  switch (elem_size) {
    case 2: return fill_sized<std::uint16_t>(dst, count, tab, it, l);
    case 4: return fill_sized<std::uint32_t>(dst, count, tab, it, l);
    case 8: return fill_sized<std::uint64_t>(dst, count, tab, it, l);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_count_wrong(const void* buf, std::size_t count, DType t,
                               const ExpectedTable& tab, int it, unsigned long long* d_counter,
                               Launch l) {
  if (count == 0) return cudaSuccess;
  return with_type(t, [&](auto tag) {
    using T = decltype(tag);
    Split sp = split(buf, count, sizeof(T), true);
    count_kernel<T><<<blocks_for(sp, l.max_blocks), kThreads, 0, l.stream>>>(
        static_cast<const T*>(buf), sp, tab, it, d_counter);
    return cudaGetLastError();
  });
}

}  // namespace gdr::cuda
