// A transport that exists only in the test build, to prove what adding one
// costs (docs/developers/settings.md): this folder and one CMake line. It
// moves bytes over the mpi transport and cuts each message into `lanes`
// pieces, a verbs-like knob declared once as a flag and its environment
// twin, with one parser and one bound for both; the value reaches the
// transport as its own typed struct through the run's Settings.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "src/core/component_options.h"
#include "transports/transport.h"

namespace gdr {
namespace {

struct ExampleSettings {
  int lanes = 1;  // pieces each message is cut into
};

GDR_REGISTER_OPTIONS(reg_example_options, declare_options<ExampleSettings>(ComponentOptions::Owner::transport, "example", {
    {{"--example-lanes", "GDR_EXAMPLE_LANES", "example: pieces each message is cut into", "1"},
     setting::whole(&ExampleSettings::lanes, 1, 8)},
}));

class ExampleTransport final : public Transport {
 public:
  ExampleTransport(std::unique_ptr<Transport> inner, const ExampleSettings& s) : inner_(std::move(inner)), s_(s) {}
  std::string_view name() const override { return "example"; }
  bool supports(MemKind k) const override { return k == MemKind::host && inner_->supports(k); }
  void connect(const std::vector<int>& peers) override { inner_->connect(peers); }
  std::unique_ptr<MemRegion> register_memory(const Buffer& b) override { return inner_->register_memory(b); }
  Request post_send(int peer, MemRegion& r, std::size_t off, std::size_t len) override {
    return post(peer, r, off, len, true);
  }
  Request post_recv(int peer, MemRegion& r, std::size_t off, std::size_t len) override {
    return post(peer, r, off, len, false);
  }
  bool test(const Request& req) override {
    std::vector<Request>& parts = pending_.at(req.id);
    std::erase_if(parts, [&](const Request& p) { return inner_->test(p); });
    if (!parts.empty()) return false;
    pending_.erase(req.id);
    return true;
  }
  std::vector<std::pair<std::string, std::string>> describe() const override {
    return {{"example.lanes", std::to_string(s_.lanes)}};
  }

 private:
  // Both sides cut a message alike, so the k-th piece meets the k-th piece.
  Request post(int peer, MemRegion& r, std::size_t off, std::size_t len, bool send) {
    std::vector<Request> parts;
    const std::size_t piece = std::max<std::size_t>(1, (len + s_.lanes - 1) / s_.lanes);
    for (std::size_t at = 0; at < len || (len == 0 && parts.empty()); at += piece) {
      const std::size_t n = std::min(piece, len - at);
      parts.push_back(send ? inner_->post_send(peer, r, off + at, n) : inner_->post_recv(peer, r, off + at, n));
      if (len == 0) break;
    }
    pending_[next_] = std::move(parts);
    return Request{next_++, peer, send, len};
  }

  std::unique_ptr<Transport> inner_;
  ExampleSettings s_;
  std::map<std::uint64_t, std::vector<Request>> pending_;
  std::uint64_t next_ = 1;
};

GDR_REGISTER_TRANSPORT(reg_example, "example", "test build only: mpi, each message cut into --example-lanes pieces",
                       [] { return std::string(); },
                       [](Bootstrap& b, const Settings& s) -> std::unique_ptr<Transport> {
                         return std::make_unique<ExampleTransport>(find_transport("mpi")->create(b, s),
                                                                   s.get<ExampleSettings>());
                       });

}  // namespace
}  // namespace gdr
