// Element types and reduction operators, with names as the CLI spells them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gdr {

enum class DType { f32, f64, i32, i64, f16, bf16 };
enum class Op { sum, prod, min, max };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f64, DType::i32,
                                       DType::i64, DType::f16, DType::bf16};
inline constexpr Op kAllOps[] = {Op::sum, Op::prod, Op::min, Op::max};

std::size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // "float", "double", "int32", ...
std::string_view op_name(Op o);        // "sum", "prod", "min", "max"
// Throw UsageError naming the bad value and the accepted ones.
DType parse_dtype(std::string_view s);
Op parse_op(std::string_view s);

}  // namespace gdr
