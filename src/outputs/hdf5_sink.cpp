#include "outputs/hdf5_sink.h"

#include <fmt/format.h>
#include <hdf5.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "record/case_fields.h"
#include "core/errors.h"
#include "verdicts/link_matrix.h"
#include "outputs/metadata.h"
#include "outputs/output_lock.h"
#include "outputs/output_path.h"
#include "outputs/redaction.h"
#include "core/shell_quote.h"

namespace gdr {
namespace {

// Small RAII for HDF5 ids.
struct H5Id {
  hid_t id;
  herr_t (*close)(hid_t);
  ~H5Id() { if (id >= 0) close(id); }
  operator hid_t() const { return id; }
};

// The file's path, for errors raised below the sink (one sink per process).
std::string g_path;

// The system's reason rides along (errno as HDF5 left it: ENOSPC on a full disk).
void check(herr_t rc, const char* call) {
  if (rc < 0) {
    const int err = errno;
    throw RunError(fmt::format("rank 0: --output {}: HDF5 {} failed{}", shell_quote(g_path), call,
                               err ? fmt::format(" ({})", std::strerror(err)) : ""));
  }
}

// Strings the build made (version, commit): stored as they are.
void attr_raw(hid_t obj, const char* name, const std::string& v) {
  H5Id type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
  H5Id space{H5Screate(H5S_SCALAR), H5Sclose};
  H5Id a{H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  const char* p = v.c_str();
  check(H5Awrite(a, type, &p), "H5Awrite");
}

// Every other string attribute goes through the one redaction (src/outputs/redaction.h).
void attr_str(hid_t obj, const char* name, const std::string& v) { attr_raw(obj, name, redact(v)); }

template <typename T>
void attr_num(hid_t obj, const char* name, T v) {
  hid_t type = std::is_floating_point_v<T> ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
  if (H5Aexists(obj, name) > 0) H5Adelete(obj, name);
  H5Id space{H5Screate(H5S_SCALAR), H5Sclose};
  H5Id a{H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  if constexpr (std::is_floating_point_v<T>) {
    double d = v;
    check(H5Awrite(a, type, &d), "H5Awrite");
  } else {
    std::int64_t i = static_cast<std::int64_t>(v);
    check(H5Awrite(a, type, &i), "H5Awrite");
  }
}

void dataset_strings(hid_t parent, const char* name, const std::vector<std::string>& v) {
  H5Id type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  hsize_t n = v.size();
  H5Id space{H5Screate_simple(1, &n, nullptr), H5Sclose};
  H5Id d{H5Dcreate2(parent, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose};
  std::vector<const char*> ptrs;
  for (auto& s : v) ptrs.push_back(s.c_str());
  check(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()), "H5Dwrite");
}

// A 1-D dataset of n values (an empty one for n = 0).
void dataset_1d(hid_t parent, const char* name, hid_t file_type, hid_t mem_type, std::size_t n, const void* data) {
  hsize_t dims = n;
  H5Id s{H5Screate_simple(1, &dims, nullptr), H5Sclose};
  H5Id d{H5Dcreate2(parent, name, file_type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose};
  if (n) check(H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "H5Dwrite");
}

// A concurrent pattern's flows as [k, 2] (sender, receiver).
void write_flows(hid_t g, const char* name, const Flows& flows) {
  std::vector<int> f;
  for (auto [a, b] : flows) f.insert(f.end(), {a, b});
  hsize_t dims[2] = {flows.size(), 2};
  H5Id space{H5Screate_simple(2, dims, nullptr), H5Sclose};
  H5Id d{H5Dcreate2(g, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose};
  check(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, f.data()), "H5Dwrite");
}

// One field of src/record/case_fields.h: an attribute (bools as int64 0/1), flows a
// dataset; Omit and Unknown leave it out (results/README.md).
void write_field(hid_t g, const char* key, const FieldValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) attr_num(g, key, x ? 1 : 0);
        else if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, double>) attr_num(g, key, x);
        else if constexpr (std::is_same_v<T, std::string>) attr_str(g, key, x);
        else if constexpr (std::is_same_v<T, Flows>) write_flows(g, key, x);
      },
      v);
}

class Hdf5Sink final : public ResultSink {
 public:
  Hdf5Sink(const std::string& path, bool force, OutputLock* lock) : path_(path), lock_(lock) {
    g_path = path;
    if (std::string why = check_output_path(path, force, "--output"); !why.empty()) throw UsageError(why);
    file_ = H5Fcreate(path.c_str(), force ? H5F_ACC_TRUNC : H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    if (file_ < 0) throw UsageError(fmt::format("--output {}: cannot create the HDF5 file", shell_quote(path)));
    cases_ = H5Gcreate2(file_, "cases", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  }
  ~Hdf5Sink() override { close(); }

  void begin(const RunMetadata& m) override {
    attr_num(file_, "schema_version", kSchemaVersion);
    write_run_attrs(m);
    H5Id ranks{H5Gcreate2(file_, "ranks", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose};
    dataset_strings(ranks, "host", m.hosts);
    dataset_1d(ranks, "local_rank", H5T_STD_I32LE, H5T_NATIVE_INT, m.local_ranks.size(), m.local_ranks.data());
    write_rank_devices(m);
    H5Id env{H5Gcreate2(file_, "environment", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose};
    for (auto& [k, v] : m.environment) attr_str(env, k.c_str(), v);
    facts_ = H5Gcreate2(file_, "facts", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    add_facts(m);
    flush();
  }

  void add(const CaseRecord& r) override {
    const double t0 = now_seconds();
    std::string name = fmt::format("{:05d}", n_cases_++);
    partial_ = name;  // until its flush lands: end() removes a case the disk cut short
    H5Id g{H5Gcreate2(cases_, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose};
    const CaseParams& c = r.params;
    for (const CaseField& f : case_fields()) write_field(g, f.key, field_value(f, r, kHdf5));
    hsize_t dims[2] = {static_cast<hsize_t>(r.ranks), static_cast<hsize_t>(c.iters)};
    H5Id space{H5Screate_simple(2, dims, nullptr), H5Sclose};
    H5Id d{H5Dcreate2(g, "times", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
           H5Dclose};
    check(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, r.times.data()), "H5Dwrite");
    attr_str(d, "units", "seconds");
    attr_num(file_, "cases_completed", n_cases_);
    flush();
    partial_.clear();
    if (const TestInfo* ti = find_test(c.test); ti && c.traits.point_to_point()) links_.add(r, ti->bytes_moved(c));
    const double dt = now_seconds() - t0;  // the case's group, datasets and flush
    write_s_ += dt;
    write_max_s_ = std::max(write_max_s_, dt);
  }

  void update(const RunMetadata& m) override {
    add_facts(m);
    write_rank_devices(m);
    flush();
  }

  // The facts first, the status last: the status is what says the rest is
  // final, and it is one small write when time is short (an interrupt).
  // After a failed write (a full disk): the reserve beside the file is freed,
  // the case being written removed, and the closing written once more.
  void end(const RunMetadata& m) override {
    try {
      close_out(m);
    } catch (const RunError&) {
      if (file_ < 0 || !lock_) throw;
      lock_->release_reserve();
      if (!partial_.empty() && H5Lexists(cases_, partial_.c_str(), H5P_DEFAULT) > 0) {
        H5Ldelete(cases_, partial_.c_str(), H5P_DEFAULT);
        --n_cases_;
      }
      partial_.clear();
      close_out(m);
    }
  }

 private:
  void close_out(const RunMetadata& m) {
    write_links();
    if (n_cases_ > 0) {
      attr_str(facts_, "scale.hdf5_case_write_s_mean", fmt::format("{:.6g}", write_s_ / n_cases_));
      attr_str(facts_, "scale.hdf5_case_write_s_max", fmt::format("{:.6g}", write_max_s_));
    }
    add_facts(m);
    write_run_attrs(m);
    flush();
    if (!close()) throw RunError(fmt::format("rank 0: --output {}: HDF5 H5Fclose failed", shell_quote(path_)));
  }

  // /ranks/gpu and /ranks/hca: "" for every rank until a transport connects,
  // rewritten when a lane adds a device (results/README.md).
  void write_rank_devices(const RunMetadata& m) {
    const std::size_t n = static_cast<std::size_t>(m.ranks);
    std::vector<std::string> gpus = m.rank_gpus, hcas = m.rank_hcas;
    gpus.resize(n);
    hcas.resize(n);
    if (devices_written_ && gpus == gpus_ && hcas == hcas_) return;
    H5Id ranks{H5Gopen2(file_, "ranks", H5P_DEFAULT), H5Gclose};
    for (auto [name, v] : {std::pair{"gpu", &gpus}, std::pair{"hca", &hcas}}) {
      if (H5Lexists(ranks, name, H5P_DEFAULT) > 0) H5Ldelete(ranks, name, H5P_DEFAULT);
      dataset_strings(ranks, name, *v);
    }
    gpus_ = std::move(gpus);
    hcas_ = std::move(hcas);
    devices_written_ = true;
  }

  void write_run_attrs(const RunMetadata& m) {
    attr_raw(file_, "gdrbench_version", m.version);
    attr_raw(file_, "git_commit", m.git_commit);
    attr_str(file_, "command_line", m.command_line);
    attr_str(file_, "start_utc", m.start_utc);
    attr_str(file_, "end_utc", m.end_utc);
    attr_str(file_, "status", m.status);
    attr_str(file_, "error", m.error);
    attr_num(file_, "ranks", m.ranks);
    attr_num(file_, "cases_completed", n_cases_);
    std::string verdict;
    for (auto& v : m.verdict) verdict += (verdict.empty() ? "" : "\n") + v;
    attr_str(file_, "verdict", verdict);
  }
  // Facts only grow (a transport connecting adds its own): write the new
  // ones, so that closing an interrupted run costs a few small writes.
  // /link_cells/<test>_<transport>_<mem>_<path>_<pattern>: bytes [S] and one cell
  // per link measured: size (index into bytes), src, dst, time_us, algbw_gbps [N];
  // results/README.md. (Older files: /links, dense [S, ranks, ranks] matrices; a new
  // group, so that readers of those never misread this one.)
  void write_links() {
    std::vector<LinkTable> tables = links_.tables();
    if (tables.empty()) return;
    if (H5Lexists(file_, "link_cells", H5P_DEFAULT) > 0) H5Ldelete(file_, "link_cells", H5P_DEFAULT);
    H5Id links{H5Gcreate2(file_, "link_cells", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose};
    for (const LinkTable& t : tables) {
      H5Id g{H5Gcreate2(links, t.name().c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose};
      for (auto [k, v] : {std::pair{"test", &t.test}, {"transport", &t.transport}, {"mem", &t.mem},
                          {"path", &t.path}, {"pattern", &t.pattern}})
        attr_str(g, k, *v);
      attr_str(g, "test_kind", t.test_kind);
      attr_num(g, "directions", t.directions);
      attr_num(g, "ranks", t.ranks);
      std::vector<std::int64_t> b(t.bytes.begin(), t.bytes.end());
      dataset_1d(g, "bytes", H5T_STD_I64LE, H5T_NATIVE_INT64, b.size(), b.data());
      for (auto [k, v] : {std::pair{"size", &t.size}, {"src", &t.src}, {"dst", &t.dst}})
        dataset_1d(g, k, H5T_STD_I32LE, H5T_NATIVE_INT, v->size(), v->data());
      for (auto [k, v] : {std::pair{"time_us", &t.time_us}, {"algbw_gbps", &t.algbw_gbps}})
        dataset_1d(g, k, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v->size(), v->data());
    }
  }
  void add_facts(const RunMetadata& m) {
    for (; facts_written_ < m.facts.size(); ++facts_written_) {
      const auto& [k, v] = m.facts[facts_written_];
      attr_str(facts_, k.c_str(), v);
    }
  }
  // false when closing the file failed (its last writes did not land).
  bool close() {
    if (facts_ >= 0) H5Gclose(facts_);
    if (cases_ >= 0) H5Gclose(cases_);
    facts_ = cases_ = -1;
    herr_t rc = file_ >= 0 ? H5Fclose(file_) : 0;
    file_ = -1;
    return rc >= 0;
  }
  // A case is on disk before the next one starts: a run that dies keeps it.
  void flush() { check(H5Fflush(file_, H5F_SCOPE_GLOBAL), "H5Fflush"); }

  std::string path_;
  OutputLock* lock_;
  std::string partial_;  // the case group being written, until flushed
  hid_t file_ = -1, cases_ = -1, facts_ = -1;
  int n_cases_ = 0;
  std::size_t facts_written_ = 0;
  LinkMatrices links_;
  std::vector<std::string> gpus_, hcas_;
  bool devices_written_ = false;
  double write_s_ = 0, write_max_s_ = 0;
};

}  // namespace

void seal_abandoned_file(const std::string& path, const std::string& status, const std::string& error) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  g_path = path;
  // A reader may hold HDF5's shared lock for a moment: retry for up to 30 s.
  H5Id f{H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
  for (int i = 0; f < 0 && i < 300 && errno == EAGAIN; ++i) {
    usleep(100000);
    f.id = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  }
  if (f < 0) return;
  // Only a file its writer left `running`: one it finished stays as it is.
  std::string now;
  {
    H5Id a{H5Aopen(f, "status", H5P_DEFAULT), H5Aclose};
    if (a < 0) return;
    H5Id type{H5Aget_type(a), H5Tclose};
    char* v = nullptr;
    if (H5Tis_variable_str(type) <= 0 || H5Aread(a, type, &v) < 0) return;
    now = v ? v : "";
    H5free_memory(v);
  }
  if (now != "running") return;
  std::int64_t done = 0;
  {
    H5Id a{H5Aopen(f, "cases_completed", H5P_DEFAULT), H5Aclose};
    if (a >= 0) H5Aread(a, H5T_NATIVE_INT64, &done);
  }
  // A case group past cases_completed was cut short as it was written.
  if (H5Lexists(f, "cases", H5P_DEFAULT) > 0) {
    H5Id cases{H5Gopen2(f, "cases", H5P_DEFAULT), H5Gclose};
    H5G_info_t info{};
    if (cases >= 0 && H5Gget_info(cases, &info) >= 0)
      for (hsize_t i = static_cast<hsize_t>(std::max<std::int64_t>(done, 0)); i < info.nlinks + 1; ++i) {
        std::string name = fmt::format("{:05d}", i);
        if (H5Lexists(cases, name.c_str(), H5P_DEFAULT) > 0) H5Ldelete(cases, name.c_str(), H5P_DEFAULT);
      }
  }
  try {
    attr_str(f, "status", status);
    attr_str(f, "error", error);
    attr_str(f, "end_utc", utc_now());
    H5Fflush(f, H5F_SCOPE_GLOBAL);
  } catch (const std::exception&) {
  }
}

std::unique_ptr<ResultSink> make_hdf5_sink(const std::string& path, bool force, OutputLock* lock) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // we report errors ourselves
  return std::make_unique<Hdf5Sink>(path, force, lock);
}

}  // namespace gdr
