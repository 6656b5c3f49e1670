#include "test.h"

#include "src/core/timer.h"

namespace gdr {

std::string_view test_kind_name(TestKind k) {
  switch (k) {
    case TestKind::collective: return "collective";
    case TestKind::latency: return "latency";
    case TestKind::bandwidth: return "bandwidth";
  }
  return "?";
}

GDR_REGISTER_OPTIONS(reg_collective_options, declare_options<CollectiveSettings>(ComponentOptions::Owner::program, "tests", {
    {{"", "GDR_WAIT_YIELD",
      "concurrent patterns: waits yield the CPU (1) or spin (0); default: yield when oversubscribed"},
     setting::whole(&CollectiveSettings::wait_yield, 0, 1)},
    {{"", "GDR_SELFTEST_CORRUPT", "self-test: corrupt one byte per case"},
     setting::on(&CollectiveSettings::selftest_corrupt)},
    {{"", "GDR_SELFTEST_SLOW_RANK", "self-test: this rank sleeps GDR_SELFTEST_SLOW_US at each concurrent window"},
     setting::whole(&CollectiveSettings::selftest_slow_rank, 0, 1'000'000)},
    {{"", "GDR_SELFTEST_SLOW_US", "self-test: the sleep of GDR_SELFTEST_SLOW_RANK, microseconds"},
     setting::whole(&CollectiveSettings::selftest_slow_us, 0, 10'000'000)},
}));

std::vector<TestInfo>& test_registry() {
  static std::vector<TestInfo> r;
  return r;
}
const TestInfo* find_test(std::string_view name) {
  for (auto& t : test_registry())
    if (t.name == name) return &t;
  return nullptr;
}
std::string test_names_where(bool (*pred)(const TestTraits&)) {
  std::vector<std::string> names;
  for (auto& t : test_registry())
    if (pred(t.traits)) names.push_back(t.name);
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out;
}

TestRegistrar::TestRegistrar(TestInfo info) { test_registry().push_back(std::move(info)); }

std::vector<ReferenceInfo>& reference_registry() {
  static std::vector<ReferenceInfo> r;
  return r;
}
const ReferenceInfo* find_reference(std::string_view name, std::string_view test) {
  for (auto& t : reference_registry())
    if (t.name == name && t.test == test) return &t;
  return nullptr;
}
std::string reference_tests(std::string_view name) {
  std::string out;
  for (auto& t : reference_registry())
    if (t.name == name) out += (out.empty() ? "" : ",") + t.test;
  return out;
}
ReferenceRegistrar::ReferenceRegistrar(ReferenceInfo info) {
  reference_registry().push_back(std::move(info));
}

double now_seconds() { return timer_now(); }

}  // namespace gdr
