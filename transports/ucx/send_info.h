// What UCX said of the first send of each (peer, memory type, length): its
// ucp_request_query info string. The lookup on every send is a compare with
// the peer's last key; the table is bounded, so a run over thousands of peers
// and sizes stops asking (those rows' paths then fall back or say unknown).
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace gdr::ucx {

class SendInfo {
 public:
  static constexpr std::size_t kMaxEntries = 1 << 16;

  // Whether the next send of this key should be asked about (first of its key).
  bool wanted(int peer, int mem, std::size_t len) {
    if (static_cast<std::size_t>(peer) >= last_.size()) last_.resize(peer + 1);
    Last& l = last_[peer];
    if (l.mem == mem && l.len == len) return false;
    l = {mem, len};
    return table_.size() < kMaxEntries && !table_.count({peer, mem, len});
  }
  // `info`: UCX's text, or "!" and why there is none.
  void note(int peer, int mem, std::size_t len, const std::string& info) {
    table_[{peer, mem, len}] = &*texts_.insert(info).first;
  }
  // The entry of exactly `len`, else of the largest shorter length to that
  // peer and memory type; null when none.
  const std::string* find(int peer, int mem, std::size_t len) const {
    auto it = table_.upper_bound({peer, mem, len});
    if (it == table_.begin()) return nullptr;
    --it;
    auto [p, m, l] = it->first;
    return p == peer && m == mem ? it->second : nullptr;
  }

 private:
  struct Last {
    int mem = -1;
    std::size_t len = 0;
  };
  std::vector<Last> last_;
  std::map<std::tuple<int, int, std::size_t>, const std::string*> table_;
  std::set<std::string> texts_;  // each distinct text once
};

}  // namespace gdr::ucx
