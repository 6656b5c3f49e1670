// The adaptive second phase (src/planning/retest.h). Mirrored by results/gdranalysis/retest.py.
#include "planning/retest.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "collectives/patterns.h"
#include "collectives/test.h"
#include "core/sizes.h"
#include "record/json_text.h"

namespace gdr {
namespace {

GDR_REGISTER_OPTIONS(reg_retest_options, declare_options<RetestSettings>(ComponentOptions::Owner::program, "retest", {
    {{"--retest", "GDR_RETEST",
      "rounds, host-rounds: after the planned steps, retest the suspicious links' ends and links against healthy "
      "partners in rounds until each is convicted or cleared (auto: when a bw or latency test runs over rounds or "
      "host-rounds; off, the default until the retests' error rates are measured)", "off"},
     setting::one_of(&RetestSettings::mode, {"auto", "off"})},
    {{"--retest-rounds", "GDR_RETEST_ROUNDS",
      "retest: rounds at most (each at most 3 steps; --budget sets their time aside)", "4", "N"},
     setting::whole(&RetestSettings::rounds, 1, 20)},
}));

using retest::Component;
using retest::Link;
using retest::Part;
using retest::Probe;

bool link_pattern(const std::string& p) { return p == "rounds" || p == "host-rounds"; }

int find(const std::vector<Component>& cs, Part p, int a, int b = -1) {
  for (std::size_t i = 0; i < cs.size(); ++i)
    if (cs[i].part == p && cs[i].a == a && cs[i].b == b) return static_cast<int>(i);
  return -1;
}

// Adds a part unless it is there; its ranks leave the healthy pool.
int add_part(retest::State& s, Part p, int a, int b = -1) {
  if (int i = find(s.comps, p, a, b); i >= 0) return i;
  Component c;
  c.part = p, c.a = a, c.b = b;
  s.comps.push_back(c);
  s.healthy.erase(a);
  if (b >= 0) s.healthy.erase(b);
  return static_cast<int>(s.comps.size()) - 1;
}

}  // namespace

bool retest_applies(const RunOptions& o) {
  if (o.settings.get<RetestSettings>().mode == "off") return false;
  bool pattern = std::any_of(o.patterns.begin(), o.patterns.end(), [](auto& p) { return link_pattern(p); });
  bool one_way = std::any_of(o.tests.begin(), o.tests.end(), [](auto& t) {
    const TestInfo* ti = find_test(t);
    return ti && ti->traits.point_to_point() && ti->traits.directions == 1 && ti->create_on_pattern;
  });
  return pattern && one_way;
}

int retest_reserve_cases(const RunOptions& o) {
  return retest_applies(o) ? o.settings.get<RetestSettings>().rounds * kRetestStepsPerRound : 0;
}

namespace retest {

const char* Component::part_name() const { return part == Part::send ? "send" : part == Part::recv ? "recv" : "link"; }

std::string Component::name() const {
  if (part == Part::link) return fmt::format("link {}>{}", a, b);
  return fmt::format("rank {} {}", a, part == Part::send ? "sending" : "receiving");
}

State plan_components(const std::vector<Link>& suspicious, int ranks) {
  State s;
  for (int r = 0; r < ranks; ++r) s.healthy.insert(r);
  std::vector<Link> left(suspicious);
  for (;;) {  // the rank in the most suspicious links, while with two or more other ranks
    std::map<int, std::set<int>> nb;
    std::map<int, int> deg;
    for (auto [a, b] : left) nb[a].insert(b), nb[b].insert(a), ++deg[a], ++deg[b];
    int best = -1, most = 0;
    for (auto& [r, n] : nb)
      if (n.size() >= 2 && deg[r] > most) best = r, most = deg[r];
    if (best < 0) break;
    std::vector<Link> mine, rest;
    for (const Link& l : left) (l.first == best || l.second == best ? mine : rest).push_back(l);
    for (const Link& l : mine) {
      const Part p = l.first == best ? Part::send : Part::recv;
      s.comps[add_part(s, p, best)].explains.push_back(l);
    }
    left = rest;
  }
  for (auto [a, b] : left) {  // a link between two ranks suspicious nowhere else: it and its halves
    add_part(s, Part::link, a, b);
    s.comps[add_part(s, Part::send, a)].explains.push_back({a, b});
    s.comps[add_part(s, Part::recv, b)].explains.push_back({a, b});
  }
  return s;
}

// Healthy partners of rank me: ranks in no part, or whose parts all cleared;
// where there is none, ranks with nothing convicted whose side that the probe
// uses is not under test; where there is none either, any peer with nothing
// convicted (everyone was suspicious: the rounds then clear them one by one).
std::vector<int> partners(const State& s, int me, Part role, const std::vector<int>& peers) {
  // A partner plays the other side of the probe: for `me` sending it receives, so its receiving must not be
  // under test; for `me` receiving, its sending.
  std::set<int> open_side;
  for (const Component& c : s.comps)
    if (c.part == (role == Part::send ? Part::recv : Part::send) && (c.state == "open" || c.state == "convicted"))
      open_side.insert(c.a);
  std::map<int, std::pair<bool, bool>> has;  // rank -> (an endpoint part open or convicted, anything convicted)
  std::map<int, bool> cleared;                // rank -> every part of it cleared
  for (const Component& c : s.comps)
    for (int r : {c.a, c.b}) {
      if (r < 0) continue;
      cleared.try_emplace(r, true);
      cleared[r] = cleared[r] && c.state == "cleared";
      if (c.part != Part::link && (c.state == "open" || c.state == "convicted")) has[r].first = true;
      if (c.state == "convicted") has[r].second = true;
    }
  std::vector<int> out, fallback;
  for (int q : peers) {
    if (q == me) continue;
    if (s.healthy.count(q) || (cleared.count(q) && cleared[q])) out.push_back(q);
    else if (!has[q].first && !has[q].second) fallback.push_back(q);
    else if (!has[q].second && !open_side.count(q)) fallback.push_back(q);
  }
  if (out.empty()) out = fallback;
  if (out.empty())  // last resort (a rail of three ranks, all in suspicious links): any peer not convicted
    for (int q : peers)
      if (q != me && !has[q].second) out.push_back(q);
  return out;
}

std::vector<std::vector<Probe>> pack_round(const State& s, int round,
                                           const std::function<std::vector<int>(int)>& peers, int max_steps) {
  std::vector<std::vector<Probe>> steps;
  std::vector<std::set<int>> busy;
  auto place = [&](Probe p) {
    for (std::size_t k = 0; k < static_cast<std::size_t>(max_steps); ++k) {
      if (k == steps.size()) steps.emplace_back(), busy.emplace_back();
      if (busy[k].count(p.src) || busy[k].count(p.dst)) continue;
      steps[k].push_back(p);
      busy[k].insert({p.src, p.dst});
      return true;
    }
    return false;
  };
  for (std::size_t i = 0; i < s.comps.size(); ++i) {
    const Component& c = s.comps[i];
    if (c.state != "open") continue;
    if (c.part == Part::link) {
      place({static_cast<int>(i), c.a, c.b, -1});
      continue;
    }
    std::vector<int> cand = partners(s, c.a, c.part, peers(c.a));
    if (cand.empty()) continue;
    // A different partner each round (and for each rank), the first that fits a step.
    const std::size_t off = static_cast<std::size_t>(round + c.a) % cand.size();
    for (std::size_t j = 0; j < cand.size(); ++j) {
      const int q = cand[(off + j) % cand.size()];
      Probe p{static_cast<int>(i), c.part == Part::send ? c.a : q, c.part == Part::send ? q : c.a, q};
      if (place(p)) break;
    }
  }
  while (!steps.empty() && steps.back().empty()) steps.pop_back();
  return steps;
}

void update(State& s, const std::vector<Probe>& probes, const std::vector<bool>& slow,
            const std::vector<std::string>& what, int round) {
  std::vector<int> seen(s.comps.size(), 0);  // 1 fast, 2 slow
  for (std::size_t i = 0; i < probes.size(); ++i) seen[probes[i].comp] = slow[i] ? 2 : 1;
  auto note = [&](Component& c, std::size_t i, const std::string& extra) {
    c.evidence += fmt::format("{}round {}: {}{}{}", c.evidence.empty() ? "" : "; ", round, slow[i] ? "slow " : "fast ",
                              what[i], extra);
  };
  // The ends first: a link's own verdict needs its halves'.
  for (bool links : {false, true})
    for (std::size_t i = 0; i < probes.size(); ++i) {
      Component& c = s.comps[probes[i].comp];
      if ((c.part == Part::link) != links) continue;
      if (!slow[i]) {
        note(c, i, "");
        if (++c.fast >= kRetestConfirm) c.state = "cleared";
        continue;
      }
      if (links) {  // counted only when both halves were fast (cleared) this round or before
        const int e1 = find(s.comps, Part::send, c.a), e2 = find(s.comps, Part::recv, c.b);
        const bool ends_fast = (e1 < 0 || s.comps[e1].state == "cleared") && (e2 < 0 || s.comps[e2].state == "cleared");
        note(c, i, ends_fast ? "" : " (an end not yet cleared: not counted)");
        if (!ends_fast) continue;
      } else {
        note(c, i, "");
      }
      if (++c.slow >= kRetestConfirm) c.state = "convicted";
    }
  // A convicted end explains its open links; a cleared end hands its links on, as links.
  const std::size_t n = s.comps.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (!seen[i] || s.comps[i].part == Part::link) continue;
    const Component c = s.comps[i];
    if (c.state == "convicted")
      for (Component& l : s.comps)
        if (l.part == Part::link && l.state == "open" && (c.part == Part::send ? l.a : l.b) == c.a) {
          l.state = "explained";
          l.evidence += fmt::format("{}explained by {}", l.evidence.empty() ? "" : "; ", c.name());
        }
    if (c.state == "cleared")
      for (auto [a, b] : c.explains) {
        if (find(s.comps, Part::link, a, b) >= 0) continue;
        add_part(s, Part::link, a, b);
        const int other = c.part == Part::send ? b : a;
        add_part(s, c.part == Part::send ? Part::recv : Part::send, other);
        s.comps[find(s.comps, c.part == Part::send ? Part::recv : Part::send, other)].explains.push_back({a, b});
      }
  }
}

void close(State& s, const std::string& why) {
  for (Component& c : s.comps)
    if (c.state == "open") {
      c.state = "unresolved";
      c.evidence += fmt::format("{}{}", c.evidence.empty() ? "" : "; ", why);
    }
}

}  // namespace retest

Retest::Retest(const RunOptions& o, patterns::Layout at)
    : on_(retest_applies(o)), at_(std::move(at)), rounds_(o.settings.get<RetestSettings>().rounds),
      rule_{LiveVerdicts::kZ, 1.0 + o.settings.get<LiveSettings>().min_slowdown_pct / 100.0} {}

void Retest::add(const CaseRecord& r, std::size_t plan_index) {
  const CaseParams& c = r.params;
  if (!on_ || !link_pattern(c.pattern) || c.reference || r.times.empty() || c.iters <= 0) return;
  const std::string key = fmt::format("{} {} {} {} {} {}", c.test, c.transport, mem_name(c.mem), path_name(c.path),
                                      c.pattern, human_bytes(c.bytes));
  Group& g = groups_[key];
  g.label = key;
  g.pattern = c.pattern;
  g.directions = c.traits.directions;
  g.plan_index = plan_index;  // the group's last case: its parameters are the retest's
  std::vector<double> scratch;
  for (auto [s, d] : c.flows) {  // the sender times each link, as live verdicts and suspects do
    if (s < 0 || s >= r.ranks || d < 0 || d >= r.ranks) continue;
    const double t = rank_median(r, s);
    if (!(t > 0)) continue;
    g.log_t[{s, d}] = std::log(t);
    g.se[{s, d}] = outlier::median_se(r, s, scratch);
  }
}

// Mirrors suspects' sender and receiver comparisons: each rank's median over
// its links as a sender (receiver) against the other ranks' (leave-out, four
// ranks at least); an outlier makes all its links that way suspicious. With
// few ranks half of the links touch a slow rank and no single link stands out.
void Retest::ends(const std::string& key, const Group& g, std::map<retest::Link, std::string>& why,
                  std::map<std::string, int>& per_group) const {
  std::vector<double> ses;
  for (auto& [l, v] : g.se) ses.push_back(v);
  const double floor = outlier::median(ses);
  for (bool send : {true, false}) {
    std::map<int, std::vector<double>> by;
    for (auto& [l, t] : g.log_t) by[send ? l.first : l.second].push_back(t);
    if (by.size() < 4) continue;
    std::vector<int> ranks;
    std::vector<double> eff;
    for (auto& [r, ts] : by) {
      ranks.push_back(r);
      eff.push_back(outlier::median(ts));
    }
    const auto loo = outlier::loo_robust(eff);  // each rank against the others
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const int r = ranks[i];
      const double v = eff[i];
      auto [m, mad] = loo[i];
      const double scale = std::max({mad, std::isfinite(floor) ? floor : 0.0, 1e-12});
      if (!rule_.outlier(v, m, scale)) continue;
      for (auto& [l, t] : g.log_t) {
        if ((send ? l.first : l.second) != r) continue;
        if (g.directions == 1) ++per_group[key];
        if (!why.count(l))
          why[l] = fmt::format("rank {} {} {:.2f}x the median of {} other ranks (z {:.1f}) in {}", r,
                               send ? "sending" : "receiving", std::exp(v - m), ranks.size() - 1, (v - m) / scale, key);
      }
    }
  }
}

bool Retest::start(std::vector<std::string>& notes) {
  if (!on_) return false;
  std::map<Link, std::string> why;
  std::map<std::string, int> per_group;
  for (auto& [key, g] : groups_) {
    std::vector<double> ses;
    for (auto& [l, v] : g.se) ses.push_back(v);
    const double floor = outlier::median(ses);
    if (g.log_t.size() < 4) continue;  // each link against 3 others at least
    std::vector<double> vals;
    for (auto& [l, t] : g.log_t) vals.push_back(t);
    const auto loo = outlier::loo_robust(vals);  // O(n log n): a fleet's millions of links
    std::size_t i = 0;
    for (auto& [l, t] : g.log_t) {
      auto [m, mad] = loo[i++];
      const double scale = std::max({mad, std::isfinite(floor) ? floor : 0.0, 1e-12});
      if (!rule_.outlier(t, m, scale)) continue;
      if (g.directions == 1) ++per_group[key];
      if (!why.count(l))
        why[l] = fmt::format("{:.2f}x the median of {} other links (z {:.1f}) in {}", std::exp(t - m), vals.size() - 1,
                             (t - m) / scale, key);
    }
  }
  for (auto& [key, g] : groups_) ends(key, g, why, per_group);
  for (auto& [l, w] : why) suspicious_.emplace_back(l, w);
  // The one-way group with the most suspicious links (ties: the later in the plan, a larger size) holds the retests.
  int most = 0;
  for (auto& [key, k] : per_group)
    if (k > most || (k == most && groups_.at(key).plan_index > groups_.at(lane_).plan_index)) most = k, lane_ = key;
  if (suspicious_.empty() || lane_.empty()) {
    notes.push_back(suspicious_.empty() ? "retest: no suspicious link in the first phase, nothing to retest"
                                        : "retest: suspicious links in bibw only, which the retests do not run");
    suspicious_.clear();
    return false;
  }
  std::vector<Link> links;
  for (auto& [l, w] : suspicious_) links.push_back(l);
  state_ = retest::plan_components(links, at_.ranks);
  healthy0_ = state_.healthy;
  std::vector<std::string> parts;
  for (auto& c : state_.comps) parts.push_back(c.name());
  notes.push_back(fmt::format("retest: {} suspicious link(s) in the first phase; testing {} against healthy partners "
                              "in {}, up to {} rounds of at most {} steps (convicted when slow in {} rounds, cleared "
                              "when fast in as many)",
                              suspicious_.size(), fmt::join(parts, ", "), lane_, rounds_, kRetestStepsPerRound,
                              kRetestConfirm));
  return true;
}

std::string Retest::next_round(int round) {
  round_.clear();
  if (suspicious_.empty() || round > rounds_) return {};
  const Group& g = groups_.at(lane_);
  auto peers = [&](int me) { return patterns::peers(g.pattern, 1, at_, me); };
  round_ = retest::pack_round(state_, round, peers, kRetestStepsPerRound);
  if (round_.empty()) return {};
  std::string msg = fmt::format("{};", g.plan_index);
  for (std::size_t k = 0; k < round_.size(); ++k) {
    if (k) msg += "|";
    for (std::size_t i = 0; i < round_[k].size(); ++i)
      msg += fmt::format("{}{}:{}", i ? "," : "", round_[k][i].src, round_[k][i].dst);
  }
  done_.clear(), slow_.clear(), what_.clear();
  return msg;
}

Retest::Steps Retest::decode(const std::string& msg) {
  Steps s;
  const auto semi = msg.find(';');
  s.plan_index = std::stoul(msg.substr(0, semi));
  std::stringstream steps(msg.substr(semi + 1));
  for (std::string step; std::getline(steps, step, '|');) {
    s.flows.emplace_back();
    std::stringstream flows(step);
    for (std::string f; std::getline(flows, f, ',');) {
      const auto colon = f.find(':');
      s.flows.back().emplace_back(std::stoi(f.substr(0, colon)), std::stoi(f.substr(colon + 1)));
    }
  }
  return s;
}

void Retest::judge(CaseRecord& rec, int round, int step) {
  const Group& g = groups_.at(lane_);
  // The baseline: the group's links between ranks healthy at the start (in no part), else the links
  // not suspicious, else all (each when 3 or more): slow links in it would widen its spread.
  std::set<retest::Link> sus;
  for (auto& [l, w] : suspicious_) sus.insert(l);
  std::vector<double> base, calm, all, ses;
  for (auto& [l, t] : g.log_t) {
    all.push_back(t);
    if (!sus.count(l)) calm.push_back(t);
    if (healthy0_.count(l.first) && healthy0_.count(l.second)) base.push_back(t);
  }
  if (base.size() < 3) base = calm.size() >= 3 ? calm : all;
  for (auto& [l, v] : g.se) ses.push_back(v);
  auto [m, mad] = outlier::robust(base);
  const double floor = outlier::median(ses);
  const double scale = std::max({mad, std::isfinite(floor) ? floor : 0.0, 1e-12});
  std::string probes;
  for (const Probe& p : round_.at(step)) {
    const double t = std::log(rank_median(rec, p.src));
    const bool slow = !std::isfinite(t) || rule_.outlier(t, m, scale);
    // Slower than the minimum ratio but no outlier: evidence of neither (src/planning/retest.h).
    const bool unclear = !slow && std::exp(t - m) > rule_.min_ratio;
    retest::Component& c = state_.comps[p.comp];
    const std::string what = p.partner >= 0 ? fmt::format("{:.2f}x with rank {} (z {:.1f})", std::exp(t - m),
                                                          p.partner, (t - m) / scale)
                                            : fmt::format("{:.2f}x (z {:.1f})", std::exp(t - m), (t - m) / scale);
    if (unclear)
      c.evidence += fmt::format("{}round {}: unclear {}", c.evidence.empty() ? "" : "; ", round, what);
    else
      done_.push_back(p), slow_.push_back(slow), what_.push_back(what);
    probes += fmt::format("{}{{\"part\":\"{}\",\"a\":{},\"b\":{},\"src\":{},\"dst\":{},\"partner\":{},"
                          "\"slow\":{},\"unclear\":{},\"ratio\":{:.6g},\"z\":{:.6g}}}",
                          probes.empty() ? "" : ",", c.part_name(), c.a, c.b, p.src, p.dst, p.partner,
                          slow ? "true" : "false", unclear ? "true" : "false", std::exp(t - m), (t - m) / scale);
  }
  rec.params.retest = fmt::format("{{\"round\":{},\"step\":{},\"group\":{},\"pattern\":{},\"probes\":[{}]}}",
                                  round, step, json_string(lane_), json_string(g.pattern), probes);
  ++steps_run_;
}

void Retest::end_round(int round) {
  retest::update(state_, done_, slow_, what_, round);
  rounds_run_ = round;
  done_.clear(), slow_.clear(), what_.clear();
}

void Retest::finish(const std::string& why_stopped, std::vector<std::string>& lines, std::vector<std::string>& events,
                    std::vector<std::pair<std::string, std::string>>& facts) {
  if (!on_) return;
  facts.emplace_back("retest.rounds_max", fmt::format("{}", rounds_));
  facts.emplace_back("retest.min_ratio", fmt::format("{:g}", rule_.min_ratio));
  facts.emplace_back("retest.z", fmt::format("{:g}", rule_.z));
  std::vector<std::string> sus;
  for (auto& [l, w] : suspicious_) sus.push_back(fmt::format("{}>{}", l.first, l.second));
  facts.emplace_back("retest.suspicious", fmt::format("{}", fmt::join(sus, ",")));
  if (suspicious_.empty()) return;
  retest::close(state_, why_stopped);
  facts.emplace_back("retest.group", lane_);
  facts.emplace_back("retest.rounds", fmt::format("{}", rounds_run_));
  facts.emplace_back("retest.steps", fmt::format("{}", steps_run_));
  std::vector<std::string> verdicts;
  for (auto& c : state_.comps) {
    verdicts.push_back(fmt::format("{}={}", c.name(), c.state));
    lines.push_back(fmt::format("retest: {} {}: {}", c.name(), c.state == "convicted" ? "CONVICTED" : c.state,
                                c.evidence.empty() ? "not probed" : c.evidence));
    events.push_back(fmt::format("{{\"record\":\"retest_verdict\",\"part\":\"{}\",\"a\":{},\"b\":{},\"what\":{},"
                                 "\"state\":\"{}\",\"slow_rounds\":{},\"evidence\":{}}}",
                                 c.part_name(), c.a, c.b, json_string(c.name()), c.state, c.slow, json_string(c.evidence)));
  }
  facts.emplace_back("retest.verdicts", fmt::format("{}", fmt::join(verdicts, ";")));
}

}  // namespace gdr
