// Host element types and reduction loops. half and bfloat16 reduce through
// float (one rounding per step, exact for the inputs we check with).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/datatype.h"

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

// Host storage of IEEE half: _Float16 where the compiler has it (gcc 12,
// clang from 15). clang 14 on x86-64 (the asan-ubsan preset) has none, so
// there half is 16 bits converted through float in software, rounding to
// nearest even as the hardware does.
#if defined(__FLT16_MAX__)
using f16 = _Float16;
inline float half_to_float(f16 v) { return static_cast<float>(v); }
inline f16 half_from_float(float f) { return static_cast<f16>(f); }
#else
struct f16 {
  std::uint16_t bits;
};
inline float half_to_float(f16 v) {
  std::uint32_t sign = std::uint32_t(v.bits & 0x8000u) << 16;
  std::uint32_t exp = (v.bits >> 10) & 0x1fu, mant = v.bits & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant x 2^-24
    float f = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -f : f;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}
inline f16 half_from_float(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  std::uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return {static_cast<std::uint16_t>(sign | 0x7e00u)};  // NaN
  if (a >= 0x477ff000u) return {static_cast<std::uint16_t>(sign | 0x7c00u)};  // >= 65520: inf
  if (a < 0x38800000u) {  // below 2^-14: subnormal half (or the smallest normal after rounding)
    float m = std::nearbyint(std::bit_cast<float>(a) * 16777216.0f);
    return {static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(m))};
  }
  a += 0xfffu + ((a >> 13) & 1u);  // round to nearest even at the 13 dropped bits
  return {static_cast<std::uint16_t>(sign | ((a - 0x38000000u) >> 13))};
}
#endif

// Storage type of each DType on the host, with conversion to and from double.
template <DType T> struct Elem;
template <> struct Elem<DType::f32> { using type = float; };
template <> struct Elem<DType::f64> { using type = double; };
template <> struct Elem<DType::i32> { using type = std::int32_t; };
template <> struct Elem<DType::i64> { using type = std::int64_t; };
template <> struct Elem<DType::f16> { using type = f16; };
template <> struct Elem<DType::bf16> { using type = bf16; };

template <typename V> inline V from_double(double d) { return static_cast<V>(d); }
template <> inline bf16 from_double<bf16>(double d) { return from_float_bf16(static_cast<float>(d)); }
template <typename V> inline double to_double(V v) { return static_cast<double>(v); }
template <> inline double to_double<bf16>(bf16 v) { return to_float(v); }
template <> inline f16 from_double<f16>(double d) { return half_from_float(static_cast<float>(d)); }
template <> inline double to_double<f16>(f16 v) { return half_to_float(v); }

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
  } else if constexpr (std::is_same_v<V, f16>) {
    for (std::size_t i = 0; i < n; ++i)
      dst[i] = half_from_float(apply<O>(half_to_float(dst[i]), half_to_float(src[i])));
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
void fill_pattern(void* dst, std::size_t bytes, std::uint64_t seed);
std::uint64_t count_wrong_pattern(const void* buf, std::size_t bytes, std::uint64_t seed);

}  // namespace gdr::host
