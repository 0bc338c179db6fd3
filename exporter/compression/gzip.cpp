// gzip for responses: whole bodies, and a constant prefix compressed once joined with a
// different rest each time (PrefixedGzip, exporter/gzip.h).
#include "exporter/compression/gzip.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <libdeflate.h>
#include <zlib.h>

namespace hwperf {

// Owns a deflate stream so that deflateEnd runs on every path, exceptions included.
namespace {

// A deflate stream allocates about 260 KiB (zlib 1.2.13 deflate.c deflateInit2_: window, hash
// chains and pending buffer, 64 KiB each at windowBits 15, memLevel 8) and frees it at the end of
// the response. glibc hands freed memory at the top of the heap back to the kernel beyond 128
// KiB (M_TRIM_THRESHOLD), so every gzip scrape page-faulted all of it in again: about 100 µs of a
// 2 KiB response's 110. Freed blocks are kept here instead, up to a few streams' worth, shared
// by all threads (zlib's zalloc/zfree hooks; zfree gives no size, so each block carries it).
class ZlibBlockPool {
 public:
  static void* allocate(void* /*opaque*/, uInt items, uInt size) {
    const std::size_t bytes = static_cast<std::size_t>(items) * size;
    {
      std::lock_guard<std::mutex> lock(instance().mutex_);
      auto& blocks = instance().free_;
      for (auto it = blocks.begin(); it != blocks.end(); ++it) {
        if (*static_cast<std::size_t*>(*it) == bytes) {
          void* block = *it;
          blocks.erase(it);
          instance().pooled_bytes_ -= bytes;
          return static_cast<char*>(block) + kHeader;
        }
      }
    }
    void* block = std::malloc(bytes + kHeader);
    if (block == nullptr) return Z_NULL;
    *static_cast<std::size_t*>(block) = bytes;
    return static_cast<char*>(block) + kHeader;
  }

  static void release(void* /*opaque*/, void* address) {
    if (address == nullptr) return;
    void* block = static_cast<char*>(address) - kHeader;
    const std::size_t bytes = *static_cast<std::size_t*>(block);
    {
      std::lock_guard<std::mutex> lock(instance().mutex_);
      if (instance().pooled_bytes_ + bytes <= kMaxPooledBytes) {
        instance().free_.push_back(block);
        instance().pooled_bytes_ += bytes;
        return;
      }
    }
    std::free(block);
  }

 private:
  static constexpr std::size_t kHeader = alignof(std::max_align_t);
  // Four streams: as many concurrent gzip scrapes as ever happen, with little memory held.
  static constexpr std::size_t kMaxPooledBytes = 4 * 272 * 1024;

  // Never destroyed, so no stream (one in a static, say) can outlive it.
  static ZlibBlockPool& instance() {
    static ZlibBlockPool* const pool = new ZlibBlockPool;
    return *pool;
  }

  std::mutex mutex_;
  std::vector<void*> free_;
  std::size_t pooled_bytes_ = 0;
};

}  // namespace

// The deflate formats a stream writes: a whole gzip member, or raw deflate blocks for one part
// of a member another part of the code frames.
enum class DeflateFormat { gzip, raw };

class DeflateStream {
 public:
  // `level` is zlib's (1 to 9). `window_bits` (9 to 15) bounds how far back a match may point:
  // no need for more than the data's own size, and a smaller window and hash table are less
  // memory to set up per stream.
  DeflateStream(DeflateFormat format, int level, int window_bits = 15, int memory_level = 8) {
    stream_.zalloc = &ZlibBlockPool::allocate;
    stream_.zfree = &ZlibBlockPool::release;
    // windowBits + 16 selects the gzip wrapper, a negative windowBits raw deflate.
    const int bits = format == DeflateFormat::gzip ? window_bits + 16 : -window_bits;
    if (deflateInit2(&stream_, level, Z_DEFLATED, bits, memory_level, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw std::runtime_error("gzip: deflateInit2 failed");
    }
  }
  ~DeflateStream() { deflateEnd(&stream_); }
  DeflateStream(const DeflateStream&) = delete;
  DeflateStream& operator=(const DeflateStream&) = delete;

  // Compresses all of `data`, appending what deflate emits to `out`: Z_FINISH ends the stream
  // with a last block, Z_SYNC_FLUSH ends the output on a byte boundary with blocks that are not.
  void feed(std::string_view data, int flush, std::string& out) {
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    stream_.avail_in = static_cast<uInt>(data.size());
    for (;;) {
      const std::size_t used = out.size();
      const std::size_t room =
          std::max<std::size_t>(deflateBound(&stream_, stream_.avail_in), 4096);
      out.resize(used + room);
      stream_.next_out = reinterpret_cast<Bytef*>(out.data() + used);
      stream_.avail_out = static_cast<uInt>(room);
      const int rc = ::deflate(&stream_, flush);
      out.resize(used + room - stream_.avail_out);
      if (rc == Z_STREAM_END) return;
      if (rc != Z_OK && rc != Z_BUF_ERROR) throw std::runtime_error("gzip: deflate failed");
      if (flush != Z_FINISH && stream_.avail_in == 0 && stream_.avail_out != 0) return;
    }
  }

 private:
  z_stream stream_{};
};

namespace {

// RFC 1952 section 2.3: ID1 ID2, CM = 8 (deflate), no flags, no time, no extra flags, OS = 3
// (Unix), as zlib's own gzip wrapper writes it.
constexpr char kGzipHeader[] = {'\x1f', '\x8b', '\x08', 0, 0, 0, 0, 0, 0, '\x03'};

void append_little_endian_32(std::string& out, unsigned long value) {
  for (int shift = 0; shift < 32; shift += 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xFF));
  }
}

// The smallest window (9 to 15 bits) that covers `size` bytes.
int window_bits_for(std::size_t size) {
  int bits = 9;
  while (bits < 15 && (std::size_t{1} << bits) < size) ++bits;
  return bits;
}

unsigned long crc_of(std::string_view data) {
  return crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(data.data()),
               static_cast<uInt>(data.size()));
}

}  // namespace

std::string gzip_compress(std::string_view data) {
  // The fastest level: an exposition repeats the same names and labels line after line, so
  // level 1 already finds most of it, at a fraction of the default level's CPU on the node being
  // measured.
  DeflateStream deflater(DeflateFormat::gzip, Z_BEST_SPEED);
  std::string out;
  deflater.feed(data, Z_FINISH, out);
  return out;
}

PrefixedGzip::PrefixedGzip(std::string_view prefix)
    : head_(kGzipHeader, sizeof kGzipHeader),
      prefix_crc_(crc_of(prefix)),
      prefix_size_(prefix.size()) {
  // Deflated once, so at the best level zlib has: at 64 CPUs the constant families are 60 kB,
  // which level 9 makes 10 % smaller than level 1 for some milliseconds at startup.
  DeflateStream deflater(DeflateFormat::raw, Z_BEST_COMPRESSION, window_bits_for(prefix.size()),
                         MAX_MEM_LEVEL);
  deflater.feed(prefix, Z_SYNC_FLUSH, head_);
}

std::string PrefixedGzip::compress(std::string_view rest) const {
  const std::uint64_t compression = (*compressions_)++;
  std::shared_ptr<const TrainedDeflate> codes = std::atomic_load(&codes_);
  if (codes == nullptr || compression % kRetrainEvery == 0) {
    codes = std::make_shared<const TrainedDeflate>(rest);
    std::atomic_store(&codes_, codes);
  }
  std::string out;
  out.reserve(head_.size() + rest.size() / 2 + 512);
  out = head_;
  if (rest.size() <= kMemoLimit && compression >= memo_from_->load()) {
    std::shared_ptr<LineMemo> previous = std::atomic_load(&memo_);
    std::shared_ptr<LineMemo> next = std::atomic_exchange(&spare_, std::shared_ptr<LineMemo>());
    if (next == nullptr) next = std::make_shared<LineMemo>();
    codes->compress(rest, out, previous.get(), *next);
    if (previous != nullptr && next->lines_copied * 4 < next->lines.size()) {
      memo_from_->store(compression + kMemoPause);
      next.reset();
    }
    std::atomic_store(&memo_, std::move(next));
    // Unless another compression still reads it (it took it before the store above), nothing
    // can reach the memo replaced now but this pointer: its buffers serve the next one. use_count
    // is a relaxed load: the fence orders the other readers' last reads (before their release
    // of it) before the writes of whoever takes the spare.
    if (previous != nullptr && previous.use_count() == 1) {
      std::atomic_thread_fence(std::memory_order_acquire);
      std::atomic_store(&spare_, std::move(previous));
    }
  } else {
    codes->compress(rest, out);
  }
  // CRC-32 runs on from the prefix's: the checksum of prefix + rest.
  append_little_endian_32(
      out, libdeflate_crc32(static_cast<std::uint32_t>(prefix_crc_), rest.data(), rest.size()));
  append_little_endian_32(out,
                          static_cast<unsigned long>((prefix_size_ + rest.size()) & 0xFFFFFFFFu));
  return out;
}

}  // namespace hwperf
