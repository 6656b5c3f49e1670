// The verbs transport's operations in flight, by request id. Ids are handed
// out in increasing order and the ops alive at once are a recent window of
// them, so id mod capacity indexes a flat array: no hashing and no heap per
// operation (an unordered_map node cost a malloc and a free per message,
// part of the 10-19 us a ping-pong turnaround took in user space on the
// Soft-RoCE guest). A collision (an old op still alive capacity ids later)
// doubles the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace gdr::verbs {

template <class T>
class IdTable {
 public:
  explicit IdTable(std::size_t capacity = 256) : slots_(round_up(capacity)) {}

  // `id` must not be alive already; 0 is never a valid id.
  T& insert(std::uint64_t id, const T& value) {
    while (slots_[index(id)].id != 0) grow();
    Slot& s = slots_[index(id)];
    s.id = id;
    s.value = value;
    ++size_;
    return s.value;
  }
  T* find(std::uint64_t id) {
    Slot& s = slots_[index(id)];
    return s.id == id && id != 0 ? &s.value : nullptr;
  }
  const T* find(std::uint64_t id) const { return const_cast<IdTable*>(this)->find(id); }
  T& at(std::uint64_t id) {
    if (T* v = find(id)) return *v;
    throw std::out_of_range("IdTable::at: no such id");
  }
  const T& at(std::uint64_t id) const { return const_cast<IdTable*>(this)->at(id); }
  void erase(std::uint64_t id) {
    Slot& s = slots_[index(id)];
    if (s.id != id || id == 0) return;
    s.id = 0;
    --size_;
  }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    std::uint64_t id = 0;  // 0: free
    T value{};
  };
  static std::size_t round_up(std::size_t n) {
    std::size_t c = 1;
    while (c < n) c <<= 1;
    return c;
  }
  std::size_t index(std::uint64_t id) const { return id & (slots_.size() - 1); }
  // Doubles until every live id has a slot of its own.
  void grow() {
    for (std::size_t cap = slots_.size() * 2;; cap *= 2) {
      std::vector<Slot> next(cap);
      bool clash = false;
      for (Slot& s : slots_) {
        if (s.id == 0) continue;
        Slot& d = next[s.id & (cap - 1)];
        if (d.id != 0) {
          clash = true;
          break;
        }
        d = s;
      }
      if (clash) continue;
      slots_.swap(next);
      return;
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace gdr::verbs
