// Host element types and reduction loops. half and bfloat16 reduce through
// float (one rounding per step, exact for the inputs we check with).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "datatype.h"

namespace gdr::host {

struct bf16 {
  std::uint16_t bits;
};

inline float to_float(bf16 v) { return std::bit_cast<float>(std::uint32_t(v.bits) << 16); }
inline bf16 from_float_bf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {static_cast<std::uint16_t>((u >> 16) | 0x40u)};  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return {static_cast<std::uint16_t>(u >> 16)};
}

// Storage type of each DType on the host, with conversion to and from double.
template <DType T> struct Elem;
template <> struct Elem<DType::f32> { using type = float; };
template <> struct Elem<DType::f64> { using type = double; };
template <> struct Elem<DType::i32> { using type = std::int32_t; };
template <> struct Elem<DType::i64> { using type = std::int64_t; };
template <> struct Elem<DType::f16> { using type = _Float16; };
template <> struct Elem<DType::bf16> { using type = bf16; };

template <typename V> inline V from_double(double d) { return static_cast<V>(d); }
template <> inline bf16 from_double<bf16>(double d) { return from_float_bf16(static_cast<float>(d)); }
template <typename V> inline double to_double(V v) { return static_cast<double>(v); }
template <> inline double to_double<bf16>(bf16 v) { return to_float(v); }

template <Op O, typename C> inline C apply(C a, C b) {
  if constexpr (O == Op::sum) return a + b;
  else if constexpr (O == Op::prod) return a * b;
  else if constexpr (O == Op::min) return std::min(a, b);
  else return std::max(a, b);
}

// dst = dst (op) src. Plain indexed loops so the compiler vectorizes them.
template <Op O, typename V>
void reduce_loop(V* __restrict dst, const V* __restrict src, std::size_t n) {
  if constexpr (std::is_same_v<V, bf16>) {
    for (std::size_t i = 0; i < n; ++i)
      dst[i] = from_float_bf16(apply<O>(to_float(dst[i]), to_float(src[i])));
  } else if constexpr (std::is_same_v<V, _Float16>) {
    for (std::size_t i = 0; i < n; ++i)
      dst[i] = static_cast<_Float16>(apply<O>(static_cast<float>(dst[i]), static_cast<float>(src[i])));
  } else {
    for (std::size_t i = 0; i < n; ++i) dst[i] = apply<O>(dst[i], src[i]);
  }
}

// Calls f.template operator()<DType>() with the compile-time type.
template <typename F> decltype(auto) dispatch(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f.template operator()<DType::f32>();
    case DType::f64: return f.template operator()<DType::f64>();
    case DType::i32: return f.template operator()<DType::i32>();
    case DType::i64: return f.template operator()<DType::i64>();
    case DType::f16: return f.template operator()<DType::f16>();
    case DType::bf16: return f.template operator()<DType::bf16>();
  }
  return f.template operator()<DType::f32>();
}

void reduce(void* dst, const void* src, std::size_t count, DType t, Op op);
void fill_input(void* dst, std::size_t count, DType t, Op op, int rank, int it);
std::uint64_t count_wrong(const void* buf, std::size_t count, DType t, Op op, int nranks, int it);

}  // namespace gdr::host
