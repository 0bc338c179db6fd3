#include "exporter/compression/lz77.h"

#include <limits>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace hwperf::lz77 {
namespace {

class MatchTablePool {
 public:
  // Never destroyed, so that a compression at exit never finds it gone.
  static MatchTablePool& instance() {
    static MatchTablePool* const pool = new MatchTablePool;
    return *pool;
  }

  std::unique_ptr<MatchTable> take() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        auto table = std::move(free_.back());
        free_.pop_back();
        return table;
      }
    }
    return std::make_unique<MatchTable>();
  }

  void give(std::unique_ptr<MatchTable> table) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < kMaxPooled) free_.push_back(std::move(table));
  }

 private:
  static constexpr std::size_t kMaxPooled = 4;

  std::mutex mutex_;
  std::vector<std::unique_ptr<MatchTable>> free_;
};

}  // namespace

Matcher::Matcher(std::string_view data)
    : bytes_(reinterpret_cast<const unsigned char*>(data.data())), size_(data.size()) {
  if (size_ >= std::numeric_limits<std::uint32_t>::max() / 2) {
    throw std::length_error("deflate: input too large");
  }
  table_ = MatchTablePool::instance().take();
  if (size_ > std::numeric_limits<std::uint32_t>::max() - table_->base) {
    table_->slots.fill(0);
    table_->base = 1;
  }
  base_ = table_->base;
}

Matcher::~Matcher() {
  table_->base = base_ + static_cast<std::uint32_t>(size_);
  try {
    MatchTablePool::instance().give(std::move(table_));
  } catch (...) {
    // No room to keep it: the table is freed instead.
  }
}

}  // namespace hwperf::lz77
