#include "datatype.h"

#include <fmt/format.h>

#include "errors.h"

namespace gdr {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: return 4;
    case DType::f64: case DType::i64: return 8;
    case DType::f16: case DType::bf16: return 2;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::f16: return "half";
    case DType::bf16: return "bfloat16";
  }
  return "?";
}

std::string_view op_name(Op o) {
  switch (o) {
    case Op::sum: return "sum";
    case Op::prod: return "prod";
    case Op::min: return "min";
    case Op::max: return "max";
  }
  return "?";
}

DType parse_dtype(std::string_view s) {
  for (DType t : kAllDTypes)
    if (dtype_name(t) == s) return t;
  throw UsageError(fmt::format(
      "unknown datatype '{}' (use float, double, int32, int64, half, bfloat16)", s));
}

Op parse_op(std::string_view s) {
  for (Op o : kAllOps)
    if (op_name(o) == s) return o;
  throw UsageError(fmt::format("unknown op '{}' (use sum, prod, min, max)", s));
}

}  // namespace gdr
