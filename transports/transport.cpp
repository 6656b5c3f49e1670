#include "transport.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include <thread>

#include "src/core/bootstrap.h"
#include "src/core/errors.h"
#include "src/core/signals.h"
#include "src/core/wait_loop.h"

namespace gdr {

std::string_view path_name(Path p) { return p == Path::direct ? "direct" : "staged"; }

Path parse_path(std::string_view s) {
  if (s == "direct") return Path::direct;
  if (s == "staged") return Path::staged;
  throw UsageError(fmt::format("unknown path '{}' (use direct, staged)", s));
}

std::vector<TransportInfo>& transport_registry() {
  static std::vector<TransportInfo> r;
  return r;
}

const TransportInfo* find_transport(std::string_view name) {
  for (auto& t : transport_registry())
    if (t.name == name) return &t;
  return nullptr;
}

TransportRegistrar::TransportRegistrar(TransportInfo info) {
  transport_registry().push_back(std::move(info));
}

namespace {

[[noreturn]] void pending_timeout(Transport& t, std::span<const Request> reqs, const char* done, std::size_t left,
                                  const Bootstrap& boot) {
  std::size_t i = 0;
  while (i + 1 < reqs.size() && done[i]) ++i;
  std::string detail = t.stall_detail(reqs[i].peer);
  throw TimeoutError(fmt::format(
      "{}: timed out after {:g} s waiting for {} of {} B {} {} over {} during {} ({} of {} "
      "operations still pending{}); roll call: {}",
      boot.me(), boot.timeout(), reqs[i].is_send ? "a send" : "a receive", reqs[i].bytes,
      reqs[i].is_send ? "to" : "from", boot.who(reqs[i].peer), t.name(), activity(), left, reqs.size(),
      detail.empty() ? "" : "; " + detail, boot.roll_call()));
}

// The one wait loop of the data path: polls until `left` requests are done;
// on_done(i) may append to reqs (and done), which adds to what is left.
template <class Reqs, class Done, class OnDone>
void poll_until_done(Transport& t, Reqs& reqs, Done& done, std::size_t left, const Bootstrap& boot,
                     OnDone&& on_done, bool yield) {
  for (WaitLoop loop(boot.timeout()); left > 0;) {
    for (std::size_t i = 0; i < reqs.size(); ++i)
      if (!done[i] && t.test(reqs[i])) {
        done[i] = 1;
        --left;
        const std::size_t before = reqs.size();
        on_done(i);
        left += reqs.size() - before;
      }
    if (left > 0 && yield) std::this_thread::yield();
    if (left == 0 || !loop.tick() || !loop.expired()) continue;
    pending_timeout(t, std::span<const Request>(reqs.data(), reqs.size()), &done[0], left, boot);
  }
}

}  // namespace

// The hot path of every timed p2p loop (a ping-pong of 8 B waits twice per
// round trip, at a fraction of a microsecond): no heap for a few requests,
// and the clock read only once the wait has spun a while.
void wait_all(Transport& t, std::span<const Request> reqs, const Bootstrap& boot) {
  char few[8] = {};
  std::vector<char> many(reqs.size() > sizeof few ? reqs.size() : 0, 0);
  char* done = many.empty() ? few : many.data();
  poll_until_done(t, reqs, done, reqs.size(), boot, [](std::size_t) {}, false);
}

void wait_all(Transport& t, std::vector<Request>& reqs, std::vector<char>& done, const Bootstrap& boot,
              const std::function<void(std::size_t)>& on_done, bool yield) {
  const auto left = reqs.size() - static_cast<std::size_t>(std::count(done.begin(), done.end(), 1));
  poll_until_done(t, reqs, done, left, boot, on_done, yield);
}

void wait_one(Transport& t, const Request& req, const Bootstrap& boot) {
  wait_all(t, std::span<const Request>(&req, 1), boot);
}

}  // namespace gdr

namespace gdr {

StagingFactory& staging_factory() {
  static StagingFactory f;
  return f;
}

std::function<std::size_t(std::size_t, const Settings&)>& staging_host_bytes() {
  static std::function<std::size_t(std::size_t, const Settings&)> f;
  return f;
}

std::unique_ptr<Transport> make_transport(std::string_view name, Bootstrap& boot, MemKind mem,
                                          Path path, const Settings& settings) {
  const TransportInfo* info = find_transport(name);
  if (!info) throw UsageError(fmt::format("transport '{}' is not built into this gdrbench", name));
  if (std::string why = info->unavailable_reason(); !why.empty())
    throw UsageError(fmt::format("transport '{}' is not usable here: {}", name, why));
  std::unique_ptr<Transport> t = info->create(boot, settings);
  if (mem == MemKind::host || path == Path::direct) {
    if (!t->supports(mem)) {
      std::string why = t->unsupported_reason(mem);
      throw UnsupportedError(fmt::format("transport '{}' cannot move {} memory directly{}; use --path staged",
                                   name, mem_name(mem), why.empty() ? "" : ": " + why));
    }
    return t;
  }
  if (!staging_factory())
    throw UsageError("the staged path is not built into this gdrbench");
  MemoryOps* ops = memory_ops(mem);
  return staging_factory()(std::move(t), boot, *ops, settings);
}

}  // namespace gdr
