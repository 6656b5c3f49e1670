#include "sweep/rank_devices.h"

#include <span>

namespace gdr {

std::string rank_gpu(MemKind mem) {
  MemoryOps* ops = memory_ops(mem);
  return ops ? ops->device_label() : std::string();
}


void add_to_list(std::string& list, const std::string& value) {
  if (value.empty()) return;
  std::size_t at = 0;
  while (at <= list.size()) {
    std::size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    if (list.compare(at, end - at, value) == 0 && !list.empty()) return;
    at = end + 1;
  }
  list += (list.empty() ? "" : ",") + value;
}

bool note_rank_devices(Bootstrap& boot, const std::string& gpu, const std::string& hca, RunMetadata& meta) {
  const std::size_t n = static_cast<std::size_t>(boot.size());
  meta.rank_gpus.resize(n);
  meta.rank_hcas.resize(n);
  bool changed = false;
  for (auto [mine, into] : {std::pair{&gpu, &meta.rank_gpus}, std::pair{&hca, &meta.rank_hcas}}) {
    auto all = boot.allgather(std::as_bytes(std::span(mine->data(), mine->size())));
    for (std::size_t r = 0; r < n && r < all.size(); ++r) {
      std::string before = (*into)[r];
      add_to_list((*into)[r], std::string(reinterpret_cast<const char*>(all[r].data()), all[r].size()));
      changed |= (*into)[r] != before;
    }
  }
  return changed;
}

}  // namespace gdr
