#include "verdicts/live_verdicts.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

#include "core/sizes.h"
#include "core/stats.h"
#include "record/json_text.h"

namespace gdr {
namespace {

using outlier::median;
using outlier::median_se;
using outlier::robust;

GDR_REGISTER_OPTIONS(reg_live_options, declare_options<LiveSettings>(ComponentOptions::Owner::program, "live-verdicts", {
    {{"--live-verdicts", "GDR_LIVE_VERDICTS",
      "link patterns (rounds, host-rounds, pair): name a slow host link or host as soon as the evidence convicts it, "
      "one '# live suspect:' line and a JSON Lines record (on, off)", "on"},
     setting::one_of(&LiveSettings::mode, {"on", "off"})},
    {{"--live-min-slowdown", "GDR_LIVE_MIN_SLOWDOWN",
      "live verdicts: a host link must be this much slower than its peers' median, percent (the "
      "threshold of suspects)", "7", "PCT"},
     setting::number_above(&LiveSettings::min_slowdown_pct, 0, 1000, "percentage")},
}));

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kExactLeaveOut = 64;

// P(X >= k), X binomial(m, p): scipy's binom.sf(k - 1, m, p), summed directly (m is small).
double binom_tail(int k, int m, double p) {
  double below = 0, c = 1;  // c = C(m, i)
  for (int i = 0; i < k && i <= m; ++i) {
    below += c * std::pow(p, i) * std::pow(1 - p, m - i);
    c = c * (m - i) / (i + 1);
  }
  return std::max(0.0, 1.0 - below);
}

double nan_max(double a, double b) {
  if (!std::isfinite(a)) return b;
  if (!std::isfinite(b)) return a;
  return std::max(a, b);
}

}  // namespace

namespace outlier {

constexpr double kMadSd = 1.4826;  // suspects.MAD_SD
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  return median_in_place(v);
}

// Mirrors suspects._robust: the median and MAD x 1.4826 of the finite values.
std::pair<double, double> robust(const std::vector<double>& v) {
  const double m = median(v);
  std::vector<double> dev;
  for (double x : v)
    if (std::isfinite(x)) dev.push_back(std::fabs(x - m));
  return {m, kMadSd * median(dev)};
}

namespace {
// The median of sorted f without the element at sorted position p: the remainder's j-th value is
// f[j] below p and f[j + 1] from p on.
double median_without(const std::vector<double>& f, std::size_t p) {
  if (f.size() < 2) return kNaN;
  const std::size_t m = f.size() - 1, last = f.size() - 1;
  auto at = [&](std::size_t j) { return j < p ? f[std::min(j, last)] : f[std::min(j + 1, last)]; };
  return m % 2 ? at((m - 1) / 2) : (at(m / 2 - 1) + at(m / 2)) / 2;
}

// Positions of v's values in ascending order (ties by index), and each value's position.
std::pair<std::vector<std::size_t>, std::vector<std::size_t>> sorted_positions(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size()), pos(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  for (std::size_t k = 0; k < order.size(); ++k) pos[order[k]] = k;
  return {order, pos};
}
}  // namespace

std::vector<std::pair<double, double>> loo_robust(const std::vector<double>& v) {
  std::vector<std::pair<double, double>> out(v.size(), robust(v));  // leaving out a NaN changes nothing
  std::vector<std::size_t> fin;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (std::isfinite(v[i])) fin.push_back(i);
  std::vector<double> vals;
  for (std::size_t i : fin) vals.push_back(v[i]);
  auto [order, pos] = sorted_positions(vals);
  std::vector<double> f;
  for (std::size_t k : order) f.push_back(vals[k]);
  std::map<double, std::vector<std::size_t>> by_median;  // at most three distinct medians
  for (std::size_t k = 0; k < fin.size(); ++k) {
    out[fin[k]].first = median_without(f, pos[k]);
    if (std::isfinite(out[fin[k]].first)) by_median[out[fin[k]].first].push_back(k);
    else out[fin[k]].second = kNaN;
  }
  for (auto& [c, ks] : by_median) {
    std::vector<double> dev;
    for (double x : f) dev.push_back(std::fabs(x - c));
    auto [dorder, drank] = sorted_positions(dev);
    std::vector<double> ds;
    for (std::size_t k : dorder) ds.push_back(dev[k]);
    for (std::size_t k : ks) out[fin[k]].second = kMadSd * median_without(ds, drank[pos[k]]);
  }
  return out;
}

// Mirrors suspects._median_se: the standard error (log units) of the median of
// one rank's iterations.
double median_se(const CaseRecord& r, int rank, std::vector<double>& log_t) {
  const std::size_t iters = static_cast<std::size_t>(r.params.iters);
  log_t.clear();
  for (std::size_t i = 0; i < iters; ++i) {
    const double t = r.times[static_cast<std::size_t>(rank) * iters + i];
    if (std::isfinite(t) && t > 0) log_t.push_back(std::log(t));
  }
  if (log_t.size() < 3) return kNaN;
  // robust(log_t).second without its copies: called for every link of every case (8,192 at 1,024 x 8)
  thread_local std::vector<double> dev;
  const double m = median_in_place(log_t);
  dev.clear();
  for (double x : log_t) dev.push_back(std::fabs(x - m));
  const double scale = kMadSd * median_in_place(dev);  // as robust() has it, bit for bit
  return 1.2533 * scale / std::sqrt(static_cast<double>(log_t.size()));
}


bool Rule::outlier(double value, double median, double scale) const {
  const double d = value - median;
  return d / scale > z && std::exp(d) > min_ratio;
}

}  // namespace outlier

LiveVerdicts::LiveVerdicts(const Settings& s)
    : on_(s.get<LiveSettings>().mode == "on"), min_ratio_(1.0 + s.get<LiveSettings>().min_slowdown_pct / 100.0) {}

// The run's hosts, once (they do not change during a run): ids in name order, so that block
// keys sort as the (sender, receiver) names suspects orders host links by.
void LiveVerdicts::learn_hosts(const std::vector<std::string>& rank_hosts) {
  if (rank_host_id_.size() == rank_hosts.size()) return;
  hosts_seen_.insert(rank_hosts.begin(), rank_hosts.end());
  host_names_.assign(hosts_seen_.begin(), hosts_seen_.end());
  rank_host_id_.clear();
  for (const std::string& h : rank_hosts)
    rank_host_id_.push_back(static_cast<std::uint64_t>(
        std::lower_bound(host_names_.begin(), host_names_.end(), h) - host_names_.begin()));
}

LiveVerdicts::Block LiveVerdicts::block_name(std::uint64_t key) const {
  return {host_names_[key >> 32], host_names_[key & 0xFFFFFFFFu]};
}

std::vector<LiveFinding> LiveVerdicts::add(const CaseRecord& r, const std::vector<std::string>& rank_hosts) {
  const CaseParams& c = r.params;
  if (!on_ || c.has_dtype || c.reference || r.times.empty() || c.iters <= 0) return {};
  const std::string pattern = c.pattern.empty() ? "pair" : c.pattern;
  const bool rounds = pattern == "rounds" || pattern == "host-rounds";
  if (pattern != "pair" && !rounds) return {};  // a rank's time there spans one link only
  if (static_cast<int>(rank_hosts.size()) < r.ranks) return {};
  learn_hosts(rank_hosts);
  const GroupKey key{c.test, c.transport, std::string(mem_name(c.mem)), std::string(path_name(c.path)), pattern,
                     c.bytes};
  Group& g = groups_[key];
  rounds_seen_ = rounds_seen_ || rounds;
  std::vector<std::pair<int, int>> links = pattern == "pair" ? std::vector<std::pair<int, int>>{{c.src, c.dst}}
                                                             : c.flows;
  std::vector<double> scratch;
  // The sender (latency: the initiator) times each link, as in src/verdicts/link_matrix.cpp.
  for (auto [s, d] : links) {
    if (s < 0 || s >= r.ranks || d < 0 || d >= r.ranks) continue;
    const double se = median_se(r, s, scratch);
    const double t = rank_median(r, s);  // suspects: log(Case.rank_medians())
    if (!(t > 0)) continue;
    const std::uint64_t lk = static_cast<std::uint64_t>(s) << 32 | static_cast<std::uint32_t>(d);
    auto [at, fresh] = g.link_at.emplace(lk, g.log_t.size());
    if (fresh) {
      const std::uint64_t bk = rank_host_id_[s] << 32 | rank_host_id_[d];
      auto [b, new_block] = g.block_at.emplace(bk, g.members.size());
      if (new_block) {
        g.block_key.push_back(bk);
        g.order.clear();  // sorted again at the next judgement
        g.members.emplace_back();
        g.block_med.push_back(kNaN);
        g.intra.push_back(rank_host_id_[s] == rank_host_id_[d]);
        g.dirty.push_back(true);
        g.decisions.emplace_back();
      }
      g.log_t.push_back(0);
      g.se.push_back(0);
      g.block_of.push_back(b->second);
      g.members[b->second].push_back(at->second);
    }
    g.log_t[at->second] = std::log(t);
    g.se[at->second] = se;
    g.dirty[g.block_of[at->second]] = true;
  }
  g.label = fmt::format("{} {} {} {} {} {}", c.test, c.transport, mem_name(c.mem), path_name(c.path), pattern,
                        human_bytes(c.bytes));
  g.step = c.step;
  g.unjudged = true;
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (g.log_t.size() > kJudgeEveryCase && now - g.judged_at < kJudgeEveryS) return {};
  g.judged_at = now;
  return judge_and_convict(g, key);
}

std::vector<LiveFinding> LiveVerdicts::finish() {
  std::vector<LiveFinding> out;
  for (auto& [key, g] : groups_)
    if (g.unjudged)
      for (LiveFinding& f : judge_and_convict(g, key)) out.push_back(std::move(f));
  return out;
}

std::vector<LiveFinding> LiveVerdicts::judge_and_convict(Group& g, const GroupKey& key) {
  g.unjudged = false;
  return convict(g, judge(g, key));
}

// Mirrors suspects._host_blocks (the "hostlink" comparisons) over the links
// measured so far at one size: each host link's median log time against the
// other host links of its class (within one host, or between two), leave-out;
// scale: MAD x 1.4826, never below the iteration noise's standard error nor
// the standard error of a difference of two host-link medians. Only classes
// with kMinBaseline others are judged. Returns the blocks judged, each with
// its baseline size.
std::vector<std::pair<std::size_t, int>> LiveVerdicts::judge(Group& g, const GroupKey& key) {
  const double floor = median(g.se);
  bool single = true;
  std::vector<double> ts;
  for (std::size_t b = 0; b < g.members.size(); ++b) {
    if (g.dirty[b]) {
      ts.clear();
      for (std::size_t i : g.members[b]) ts.push_back(g.log_t[i]);
      g.block_med[b] = median(ts);
      g.dirty[b] = false;
    }
    single = single && g.members[b].size() == 1;
  }
  std::vector<double> rest;  // each link less its block's median (not with one rank per host)
  rest.reserve(g.log_t.size());
  for (std::size_t i = 0; i < g.log_t.size(); ++i) rest.push_back(g.log_t[i] - (single ? 0.0 : g.block_med[g.block_of[i]]));
  const double sd = robust(rest).second;
  if (g.order.size() != g.members.size()) {
    g.order.resize(g.members.size());
    for (std::size_t b = 0; b < g.order.size(); ++b) g.order[b] = b;
    std::sort(g.order.begin(), g.order.end(), [&](std::size_t a, std::size_t b) { return g.block_key[a] < g.block_key[b]; });
  }
  std::vector<std::pair<std::size_t, int>> judged;
  bool any_short = false;
  for (bool intra : {true, false}) {
    std::vector<std::size_t> bs;
    for (std::size_t b : g.order)
      if (g.intra[b] == intra) bs.push_back(b);
    if (bs.empty()) continue;
    if (static_cast<int>(bs.size()) - 1 < kMinBaseline) {
      any_short = true;
      continue;
    }
    // Leave-out as suspects does, exactly up to kExactLeaveOut blocks (O(B^2) a case); above, the
    // median of the others by index and the class's MAD (one block moves a MAD of so many by < 1/B).
    std::vector<double> vals;
    for (std::size_t b : bs) vals.push_back(g.block_med[b]);
    const double class_mad = bs.size() > kExactLeaveOut ? robust(vals).second : kNaN;
    std::sort(vals.begin(), vals.end());
    for (std::size_t b : bs) {
      const double mb = g.block_med[b];
      double m = kNaN, mad = class_mad;
      if (bs.size() > kExactLeaveOut) {
        // the others' middle: vals less one copy of mb
        const auto at = std::lower_bound(vals.begin(), vals.end(), mb) - vals.begin();
        const std::size_t n = vals.size() - 1;
        auto other = [&](std::size_t k) { return vals[k + (static_cast<std::ptrdiff_t>(k) >= at ? 1 : 0)]; };
        m = (other((n - 1) / 2) + other(n / 2)) / 2;
      } else {
        std::vector<double> others;
        for (std::size_t o : bs)
          if (o != b) others.push_back(g.block_med[o]);
        std::tie(m, mad) = robust(others);
      }
      const std::size_t n_others = bs.size() - 1;
      const double se = std::isfinite(sd) ? 1.7725 * sd / std::sqrt(static_cast<double>(g.members[b].size())) : kNaN;
      const double fl = nan_max(floor, se);
      const double scale = std::max({mad, std::isfinite(fl) ? fl : 0.0, 1e-12});
      const double d = mb - m;
      Decision dec{true, false, std::exp(d), d / scale};
      dec.outlier = outlier::Rule{kZ, min_ratio_}.outlier(mb, m, scale);
      g.decisions[b] = dec;
      judged_any_ = true;
      judged.emplace_back(b, static_cast<int>(n_others));
    }
  }
  if (any_short) without_baseline_.insert(key);
  else without_baseline_.erase(key);
  return judged;
}

// Mirrors the conviction of suspects.analyze: two or more outliers, and more
// than chance allows, P(X >= k) < alpha for X binomial over the host link's
// comparisons so far with the healthy rate p0. A host: every host link from
// it (or to it) to two or more others convicted. Only a host link that is an
// outlier now can be newly convicted (its other sizes' decisions did not
// change), and only a newly named one can make a host.
std::vector<LiveFinding> LiveVerdicts::convict(const Group& g, const std::vector<std::pair<std::size_t, int>>& judged) {
  std::vector<LiveFinding> out;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (auto& [b, baseline] : judged) {
    if (!g.decisions[b].outlier) continue;
    const auto [from_host, to_host] = block_name(g.block_key[b]);
    const std::string what = from_host + ">" + to_host;
    if (named_.count("hostlink " + what)) continue;
    std::vector<double> ratios;
    double max_z = 0;
    int m = 0;
    for (auto& [k, other] : groups_) {  // this host link at every size so far
      auto it = other.block_at.find(g.block_key[b]);
      if (it == other.block_at.end() || !other.decisions[it->second].judged) continue;
      const Decision& dec = other.decisions[it->second];
      ++m;
      if (dec.outlier) {
        ratios.push_back(dec.ratio);
        max_z = std::max(max_z, dec.z);
      }
    }
    const int k = static_cast<int>(ratios.size());
    const double p = binom_tail(k, m, kP0);
    if (k < 2 || p >= kAlpha) continue;
    named_.insert("hostlink " + what);
    out.push_back({"hostlink", what, {from_host, to_host}, median(ratios), max_z, k, m, p, g.label, g.step, baseline, "",
                   now});
  }
  if (out.empty()) return out;
  for (const std::string& h : hosts_seen_) {
    if (named_.count("host " + h) || hosts_seen_.size() < 3) continue;
    bool from = true, to = true;
    for (const std::string& o : hosts_seen_) {
      if (o == h) continue;
      from = from && named_.count("hostlink " + h + ">" + o);
      to = to && named_.count("hostlink " + o + ">" + h);
    }
    if (!from && !to) continue;
    named_.insert("host " + h);
    LiveFinding f;
    f.kind = "host";
    f.what = h;
    f.hosts = {h};
    f.group = g.label;
    f.step = g.step;
    f.unix_s = now;
    f.measured_in = static_cast<int>(hosts_seen_.size()) - 1;
    f.outlier_in = f.measured_in;
    f.ratio = kNaN;
    f.p_value = kNaN;
    f.side = from ? "sending" : "receiving";
    out.push_back(f);
  }
  convicted_ += static_cast<int>(out.size());
  return out;
}

std::string LiveVerdicts::summary() const {
  // Default `pair` runs (one pair a size) never have a baseline: nothing to say.
  if (!on_ || (!judged_any_ && !rounds_seen_)) return {};
  std::string s = fmt::format("live verdicts: {} suspect(s) named during the run (host links against {} or more "
                              "others of their class, more than {:g} robust sd and {:g}% slower, convicted at P < "
                              "{:g} for a healthy outlier rate of {:g}%)",
                              convicted_, kMinBaseline, kZ, (min_ratio_ - 1) * 100, kAlpha, kP0 * 100);
  if (!without_baseline_.empty())
    s += fmt::format("; {} of {} groups had fewer than {} other host links of a class, not judged live "
                     "(gdrbench suspects judges the file)",
                     without_baseline_.size(), groups_.size(), kMinBaseline);
  return s;
}

std::string LiveFinding::line() const {
  const std::string where = step >= 0 ? fmt::format("{}, step {}", group, step) : group;
  if (kind == "host")
    return fmt::format("live suspect: host {}: every host link {} the {} other hosts is a suspect ({})",
                       what, side == "sending" ? "from it to" : "to it from",
                       measured_in, where);
  return fmt::format("live suspect: host link {} {:.3f}x the median of {} other host links ({}): an outlier in {} "
                     "of {} comparisons, chance {:.1e}",
                     what, ratio, baseline, where, outlier_in, measured_in, p_value);
}

std::string LiveFinding::json() const {
  std::string hs;
  for (auto& h : hosts) hs += (hs.empty() ? "" : ",") + json_string(h);
  return fmt::format("{{\"record\":\"live_suspect\",\"kind\":{},\"what\":{},\"hosts\":[{}],\"ratio\":{},"
                     "\"max_z\":{},\"outlier_in\":{},\"measured_in\":{},\"p_value\":{},\"group\":{},\"step\":{},"
                     "\"baseline\":{},\"side\":{},\"unix_s\":{:.3f}}}",
                     json_string(kind), json_string(what), hs, json_number(ratio), json_number(max_z),
                     outlier_in, measured_in, json_number(p_value), json_string(group), step, baseline,
                     json_string(side), unix_s);
}

void report_live(const LiveFinding& f, std::vector<std::unique_ptr<ResultSink>>& sinks) {
  fmt::print("# {}\n", f.line());
  std::fflush(stdout);
  for (auto& s : sinks) s->event(f.json());
}

}  // namespace gdr
