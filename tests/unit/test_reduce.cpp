// Host reductions for every datatype and op, and the exact inputs: the
// expected value computed independently (rank by rank in double) must match.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "src/memory/exact_inputs.h"
#include "src/memory/host_reduce.h"
#include "src/memory/memory.h"

using namespace gdr;

namespace {

// Reduces `n` ranks' inputs the way the ring would (pairwise, into one buffer).
std::vector<std::byte> reduce_ranks(DType t, Op op, std::size_t count, int n, int it) {
  const std::size_t bytes = count * dtype_size(t);
  std::vector<std::byte> acc(bytes), tmp(bytes);
  host::fill_input(acc.data(), count, t, op, 0, it);
  for (int r = 1; r < n; ++r) {
    host::fill_input(tmp.data(), count, t, op, r, it);
    host::reduce(acc.data(), tmp.data(), count, t, op);
  }
  return acc;
}

}  // namespace

class EveryTypeAndOp : public ::testing::TestWithParam<std::tuple<DType, Op>> {};

TEST_P(EveryTypeAndOp, ExactForManyRankCounts) {
  auto [t, op] = GetParam();
  for (int n : {1, 2, 3, 4, 7, 16, 64}) {
    for (int it : {0, 1, 5}) {
      const std::size_t count = 1031;  // prime: no period lines up with it
      auto acc = reduce_ranks(t, op, count, n, it);
      EXPECT_EQ(host::count_wrong(acc.data(), count, t, op, n, it), 0u)
          << dtype_name(t) << " " << op_name(op) << " n=" << n << " it=" << it;
    }
  }
}

TEST_P(EveryTypeAndOp, CheckCatchesMistakes) {
  auto [t, op] = GetParam();
  const std::size_t count = 4096;
  const int n = 4;
  auto acc = reduce_ranks(t, op, count, n, 2);
  // A stale iteration and a corrupted element must show for every op; a
  // missing rank for sum (min, max and prod are idempotent on repeats).
  EXPECT_GT(host::count_wrong(acc.data(), count, t, op, n, 3), count / 2);
  if (op == Op::sum) {
    auto short_acc = reduce_ranks(t, op, count, n - 1, 2);
    EXPECT_GT(host::count_wrong(short_acc.data(), count, t, op, n, 2), count / 4);
  }
  std::memset(acc.data() + 17 * dtype_size(t), 0x7f, dtype_size(t));
  EXPECT_EQ(host::count_wrong(acc.data(), count, t, op, n, 2), 1u);
}

TEST_P(EveryTypeAndOp, MemoryOpsTableMatchesFreeFunctions) {
  auto [t, op] = GetParam();
  MemoryOps* ops = memory_ops(MemKind::host);
  ASSERT_NE(ops, nullptr);
  UniqueBuffer a(ops, 100 * 8), b(ops, 100 * 8);
  ops->fill_input(a.data(), 100, t, op, 0, 0);
  ops->fill_input(b.data(), 100, t, op, 1, 0);
  ops->reduce(a.data(), b.data(), 100, t, op);
  EXPECT_EQ(ops->count_wrong(a.data(), 100, t, op, 2, 0), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Host, EveryTypeAndOp,
    ::testing::Combine(::testing::Values(DType::f32, DType::f64, DType::i32, DType::i64,
                                         DType::f16, DType::bf16),
                       ::testing::Values(Op::sum, Op::prod, Op::min, Op::max)),
    [](const auto& info) {
      return std::string(dtype_name(std::get<0>(info.param))) + "_" +
             std::string(op_name(std::get<1>(info.param)));
    });

TEST(ExactInputs, SegmentsDiffer) {
  // Two segments of the same length must not carry identical patterns, or a
  // misplaced segment would pass the check.
  int same = 0;
  for (std::uint64_t i = 0; i < 256; ++i)
    same += exact::phase(i, 0) == exact::phase(i + 256, 0);
  EXPECT_LT(same, 128);
}

// The result must vary along the buffer for every rank count, or a segment
// put in the wrong place would still compare equal.
TEST(ExactInputs, ResultVariesForEveryRankCount) {
  for (int op = 0; op < 4; ++op)
    for (int n = 1; n <= 300; ++n) {
      std::set<double> distinct;
      for (std::uint64_t p = 0; p < 8; ++p) distinct.insert(exact::expected_at_phase(op, p, n));
      EXPECT_GE(distinct.size(), 4u) << "op " << op << " n " << n;
    }
}

TEST(ExactInputs, ValuesAreSmallIntegers) {
  for (int op = 0; op < 4; ++op)
    for (std::uint64_t p = 0; p < 8; ++p)
      for (int r = 0; r < 9; ++r) {
        double v = exact::input_at_phase(op, p, r);
        EXPECT_EQ(v, static_cast<int>(v));
        EXPECT_LE(std::abs(v), 4.0);
      }
}

TEST(Bfloat16, RoundsToNearestEven) {
  EXPECT_EQ(host::to_float(host::from_float_bf16(1.0f)), 1.0f);
  EXPECT_EQ(host::to_float(host::from_float_bf16(-3.0f)), -3.0f);
  EXPECT_EQ(host::to_float(host::from_float_bf16(256.0f)), 256.0f);
  EXPECT_EQ(host::to_float(host::from_float_bf16(257.0f)), 256.0f);  // tie -> even
  EXPECT_EQ(host::to_float(host::from_float_bf16(259.0f)), 260.0f);
}
