#include "record/case_fields.h"

#include <stdexcept>

namespace gdr {

std::string dtype_label(const CaseParams& c) { return std::string(c.has_dtype ? dtype_name(c.dtype) : kNoDtypeLabel); }
std::string op_label(const CaseParams& c) { return std::string(c.has_dtype ? op_name(c.op) : kNoOpLabel); }

namespace {

using R = const CaseRecord&;
FieldValue i64(std::int64_t v) { return v; }
FieldValue str(std::string_view v) { return std::string(v); }
FieldValue us(double seconds) { return seconds * 1e6; }
// Only on the cases of a concurrent pattern.
bool patterned(R r) { return !r.params.pattern.empty(); }
// The JSON row of a pair: its src/dst, null for collectives; a pattern's row
// carries pattern, step and flows instead.
FieldValue json_pair(R r, int v) {
  if (patterned(r)) return Omit{};
  if (r.params.has_dtype) return Unknown{};
  return i64(v);
}

const std::vector<CaseField> kFields = {
    {"test", kBoth, [](R r) { return str(r.params.test); }},
    // The test's traits (collectives/test.h), so that readers need not know its name.
    {"test_kind", kHdf5, [](R r) { return str(test_kind_name(r.params.traits.kind)); }},
    {"directions", kHdf5, [](R r) { return i64(r.params.traits.directions); }},
    {"checks_data", kHdf5, [](R r) { return FieldValue{r.params.traits.checks_data}; }},
    {"transport", kBoth, [](R r) { return str(r.params.transport); }},
    {"reference", kBoth, [](R r) { return FieldValue{r.params.reference}; }},
    {"mem", kBoth, [](R r) { return str(mem_name(r.params.mem)); }},
    {"path", kBoth, [](R r) { return str(path_name(r.params.path)); }},
    {"transport_mode", kHdf5,
     [](R r) { return r.transport_mode.empty() ? FieldValue{Omit{}} : str(r.transport_mode); }},
    {"dtype", kBoth, [](R r) { return str(dtype_label(r.params)); }},
    {"op", kBoth, [](R r) { return str(op_label(r.params)); }},
    {"src", kBoth, [](R r) { return i64(r.params.src); }, [](R r) { return json_pair(r, r.params.src); }},
    {"dst", kBoth, [](R r) { return i64(r.params.dst); }, [](R r) { return json_pair(r, r.params.dst); }},
    {"pattern", kBoth, [](R r) { return patterned(r) ? str(r.params.pattern) : Omit{}; }},
    {"step", kBoth, [](R r) { return patterned(r) ? i64(r.params.step) : Omit{}; }},
    {"flows", kBoth, [](R r) { return patterned(r) ? FieldValue{r.params.flows} : Omit{}; }},
    // A retest step (src/planning/retest.h): its round, and each probe's link, partner and why, as JSON.
    {"retest_round", kBoth, [](R r) { return r.params.retest_round > 0 ? i64(r.params.retest_round) : Omit{}; }},
    {"retest", kBoth, [](R r) { return r.params.retest_round > 0 ? str(r.params.retest) : Omit{}; }},
    {"ranks", kBoth, [](R r) { return i64(r.ranks); }},
    {"bytes", kBoth, [](R r) { return i64(static_cast<std::int64_t>(r.params.bytes)); }},
    {"count", kBoth, [](R r) { return i64(static_cast<std::int64_t>(r.params.count)); }},
    {"iters", kBoth, [](R r) { return i64(r.params.iters); }},
    // 1: the count was cut to case_time_s.
    {"iters_auto", kHdf5, [](R r) { return FieldValue{r.params.iters_auto}; }},
    {"case_time_s", kHdf5, [](R r) { return r.params.iters_auto ? FieldValue{r.params.case_time} : Omit{}; }},
    {"warmup", kHdf5, [](R r) { return i64(r.params.warmup); }},
    // 0 none, 1 every timed iteration, 2 one untimed batch after them.
    {"check", kHdf5, [](R r) { return i64(static_cast<int>(r.params.check)); }},
    {"check_mode", kHdf5, [](R r) { return str(check_name(r.params.check)); }},
    // Iterations whose data were verified (the most any rank verified).
    {"checked_iters", kBoth, [](R r) { return i64(static_cast<std::int64_t>(r.checked_iters)); }},
    {"window", kHdf5, [](R r) { return uses_window(r.params) ? i64(r.params.window) : Omit{}; }},
    {"window_means", kHdf5, [](R r) { return uses_window(r.params) ? str(r.params.traits.window) : Omit{}; }},
    // p2p: distinct buffers per side.
    {"slots", kHdf5,
     [](R r) { return !r.params.has_dtype && !r.params.reference ? i64(r.params.slots) : Omit{}; }},
    {"chunk_bytes", kHdf5,
     [](R r) { return uses_chunk(r.params) ? i64(static_cast<std::int64_t>(r.params.chunk_bytes)) : Omit{}; }},
    {"chunk_means", kHdf5, [](R r) { return uses_chunk(r.params) ? str(r.params.traits.chunk) : Omit{}; }},
    {"time_us_mean", kBoth, [](R r) { return us(r.slowest.mean); }},
    {"time_us_min", kBoth, [](R r) { return us(r.slowest.min); }},
    {"time_us_max", kBoth, [](R r) { return us(r.slowest.max); }},
    {"time_us_median", kBoth, [](R r) { return us(r.slowest.median); }},
    {"time_us_p99", kBoth, [](R r) { return us(r.slowest.p99); }},
    {"algbw_gbps", kBoth, [](R r) { return FieldValue{r.algbw_gbps}; }},
    {"busbw_gbps", kBoth, [](R r) { return FieldValue{r.busbw_gbps}; }},
    {"wrong", kBoth, [](R r) { return i64(static_cast<std::int64_t>(r.wrong)); }},
    // The path: what moved the bytes and the ceiling of that path; without a
    // known ceiling peak_source says why.
    {"path_taken", kBoth, [](R r) { return str(r.path_taken); }},
    {"via_host", kBoth, [](R r) { return FieldValue{r.via_host}; }},
    {"via_host_cause", kHdf5, [](R r) { return r.via_host ? str(r.via_host_cause) : Omit{}; }},
    {"path_unknown", kBoth, [](R r) { return r.path_unknown.empty() ? Omit{} : str(r.path_unknown); }},
    {"peak_gbps", kBoth, [](R r) { return r.peak_gbps > 0 ? FieldValue{r.peak_gbps} : Unknown{}; }},
    {"pct_peak", kBoth, [](R r) { return r.peak_gbps > 0 ? FieldValue{r.pct_peak} : Unknown{}; }},
    {"peak_source", kHdf5, [](R r) { return str(r.peak_gbps > 0 ? r.peak_source : r.peak_why); }},
};

}  // namespace

const std::vector<CaseField>& case_fields() { return kFields; }

const CaseField& case_field(std::string_view key) {
  for (const CaseField& f : kFields)
    if (key == f.key) return f;
  throw std::logic_error("case_field: no field " + std::string(key));
}

FieldValue field_value(const CaseField& f, const CaseRecord& r, FieldSink sink) {
  if (!(f.sinks & sink)) return Omit{};
  return sink == kJsonl && f.json ? f.json(r) : f.get(r);
}

}  // namespace gdr
