// TrainedDeflate::compress with a memo (exporter/compression/line_memo.h).
#include <algorithm>
#include <cstring>
#include <memory>

#include "exporter/compression/deflate_format.h"
#include "exporter/compression/lz77.h"
#include "exporter/compression/trained_deflate.h"

namespace hwperf {
namespace {

// How many bytes `a` and `b` have in common from their start, compared 256 at a time.
std::size_t common_prefix(std::string_view a, std::string_view b) {
  constexpr std::size_t kBlock = 256;
  const std::size_t size = std::min(a.size(), b.size());
  std::size_t at = 0;
  while (at + kBlock <= size && std::memcmp(a.data() + at, b.data() + at, kBlock) == 0) {
    at += kBlock;
  }
  while (at < size && a[at] == b[at]) ++at;
  return at;
}

// The lines of a text: where each starts, and whether it is, byte for byte, the line of the same
// index in the memo's text (`changed_before[i]` counts the lines before line i that are not).
// The first `kept` lines are the memo's own, unchanged, and are not looked at again.
struct Lines {
  std::vector<std::uint32_t> starts;  // one more: the text's end
  std::vector<std::uint32_t> changed_before;

  Lines(std::string_view text, const LineMemo* previous, std::uint32_t kept) {
    starts.reserve(previous != nullptr ? previous->lines.size() + 1 : 64);
    for (std::uint32_t i = 0; i < kept; ++i) starts.push_back(previous->lines[i].start);
    for (std::size_t at = kept > 0 ? previous->lines[kept].start : 0; at < text.size();) {
      starts.push_back(static_cast<std::uint32_t>(at));
      const void* newline = std::memchr(text.data() + at, '\n', text.size() - at);
      at = newline ? static_cast<std::size_t>(static_cast<const char*>(newline) - text.data()) + 1
                   : text.size();
    }
    starts.push_back(static_cast<std::uint32_t>(text.size()));
    changed_before.assign(starts.size(), 0);
    std::uint32_t changed = 0;
    for (std::size_t i = kept; i + 1 < starts.size(); ++i) {
      changed_before[i] = changed;
      if (previous == nullptr || !same_line(text, i, *previous)) ++changed;
    }
    changed_before.back() = changed;
  }

  std::size_t count() const { return starts.size() - 1; }
  // The line that holds `position`, looked for from line `near` (it is nearly always that line
  // or one beside it).
  std::uint32_t line_of(std::size_t position, std::uint32_t near) const {
    while (near > 0 && starts[near] > position) --near;
    while (starts[near + 1] <= position) ++near;
    return near;
  }
  bool all_same(std::uint32_t first, std::uint32_t last) const {
    return last + 1 < starts.size() && changed_before[last + 1] == changed_before[first];
  }

 private:
  bool same_line(std::string_view text, std::size_t i, const LineMemo& previous) const {
    if (i >= previous.lines.size()) return false;
    const std::size_t length = starts[i + 1] - starts[i];
    const std::size_t old_start = previous.lines[i].start;
    const std::size_t old_end =
        i + 1 < previous.lines.size() ? previous.lines[i + 1].start : previous.text.size();
    return old_end - old_start == length &&
           std::memcmp(previous.text.data() + old_start, text.data() + starts[i], length) == 0;
  }
};

// The memo's first lines that a text starts with unchanged, and whose tokens read nothing after
// them: their tokens, candidates and bits are the memo's as they are. (A text is mostly a copy
// of the last one up to the first value that moved.)
std::uint32_t unchanged_lines(std::string_view text, const LineMemo* previous) {
  if (previous == nullptr || previous->lines.empty()) return 0;
  const std::size_t same = common_prefix(text, previous->text);
  const auto& lines = previous->lines;
  std::uint32_t whole = 0;  // lines that end before the first difference
  while (whole + 1 < lines.size() && lines[whole + 1].start <= same) ++whole;
  std::uint32_t kept = 0;
  while (kept < whole && lines[kept].reads_to_line < whole) ++kept;
  return kept;
}

// What the parse of one line made candidates of (from the line's start) and read, for the memo.
// The candidates go into an array sized for the most a text can make: two a byte.
struct LineRecorder {
  std::uint32_t* inserts;
  std::size_t line_start;
  std::size_t reads_from;
  void inserted(std::uint32_t /*slot*/, std::size_t at) {
    *inserts++ = static_cast<std::uint32_t>(at - line_start);
  }
  void copied_from(std::size_t at) { reads_from = std::min(reads_from, at); }
};

// Encodes a text line by line, each line's tokens copied from the memo's when they can be and
// parsed otherwise. Copies of consecutive lines are written as one (their bits follow each other
// in the memo too), and a copied line's candidates are made again in the match table only when
// a line is parsed after it, for the kReplayLines lines before that one: a parsed line finds its
// matches in the lines just above it, and a candidate made for nothing would cost as much as the
// copy.
struct LineEncoder {
  static constexpr std::uint32_t kReplayLines = 16;

  std::string_view data;
  const LineMemo* previous;
  const Lines& lines;
  LineMemo& next;
  const unsigned char* start;
  deflate_format::EncodingSink sink;
  lz77::Matcher matcher;
  std::size_t at = 0;
  std::uint32_t* inserts = next.inserts.data();
  std::uint64_t copy_begin = 0;  // the memo's bits not written yet, from consecutive lines
  std::uint64_t copy_end = 0;
  std::uint32_t replayed = 0;  // the lines before this one are in the match table

  void run(std::uint32_t kept) {
    keep(kept);
    for (std::uint32_t index = kept; index < lines.count(); ++index) {
      LineMemo::Line& line = next.lines[index];
      line.start = lines.starts[index];
      line.tokens_begin = static_cast<std::uint32_t>(at);
      line.inserts_begin = static_cast<std::uint32_t>(inserts - next.inserts.data());
      line.bits_begin = position();
      if (!copy(index, line)) parse(index, line);
      line.tokens_end = static_cast<std::uint32_t>(at);
      line.inserts_end = static_cast<std::uint32_t>(inserts - next.inserts.data());
      line.bits_end = position();
    }
    write_copy();
  }

  // Where the encoding stands in bits, the copy not written yet included.
  std::uint64_t position() const { return sink.writer.position(start) + (copy_end - copy_begin); }

  // The first `kept` lines, which are the memo's in every respect.
  void keep(std::uint32_t kept) {
    if (kept == 0) return;
    const LineMemo::Line& last = previous->lines[kept - 1];
    std::copy_n(previous->lines.begin(), kept, next.lines.begin());
    std::copy_n(previous->inserts.data(), last.inserts_end, inserts);
    inserts += last.inserts_end;
    copy_begin = previous->lines[0].bits_begin;
    copy_end = last.bits_end;
    at = last.tokens_end;
    next.lines_copied = kept;
  }

  // Copies line `index` when its tokens begin where the encoding is and every line they read is
  // as it was (and so at the same place relative to this one).
  bool copy(std::uint32_t index, LineMemo::Line& line) {
    if (previous == nullptr || index >= previous->lines.size() || !lines.all_same(index, index)) {
      return false;
    }
    const LineMemo::Line& old = previous->lines[index];
    const auto shift = static_cast<std::int64_t>(line.start) - old.start;
    if (static_cast<std::int64_t>(old.tokens_begin) + shift != static_cast<std::int64_t>(at) ||
        !lines.all_same(old.reads_from_line, old.reads_to_line)) {
      return false;
    }
    if (old.bits_begin != copy_end) write_copy();
    if (copy_begin == copy_end) copy_begin = copy_end = old.bits_begin;
    copy_end = old.bits_end;
    const std::uint32_t count = old.inserts_end - old.inserts_begin;
    std::copy_n(previous->inserts.data() + old.inserts_begin, count, inserts);
    inserts += count;
    at = static_cast<std::size_t>(old.tokens_end + shift);
    line.reads_from_line = old.reads_from_line;
    line.reads_to_line = old.reads_to_line;
    ++next.lines_copied;
    return true;
  }

  void parse(std::uint32_t index, LineMemo::Line& line) {
    write_copy();
    replay(index);
    LineRecorder recorder{inserts, line.start, at};
    sink.writer = matcher.parse(at, lines.starts[index + 1], sink, recorder).writer;
    inserts = recorder.inserts;
    line.reads_from_line =
        recorder.reads_from < data.size() ? lines.line_of(recorder.reads_from, index) : index;
    line.reads_to_line = at > line.start ? lines.line_of(at - 1, index) : index;
    replayed = index + 1;
  }

  void write_copy() {
    if (copy_begin == copy_end) return;
    sink.writer.copy(reinterpret_cast<const unsigned char*>(previous->bits.data()), copy_begin,
                     copy_end);
    copy_begin = copy_end;
  }

  // The candidates of the copied lines just before line `index`. A candidate is hashed on 4
  // bytes, which may reach past the lines compared.
  void replay(std::uint32_t index) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
    const std::uint32_t first = std::max(replayed, index > kReplayLines ? index - kReplayLines : 0);
    for (std::uint32_t line = first; line < index; ++line) {
      const LineMemo::Line& copied = next.lines[line];
      for (std::uint32_t i = copied.inserts_begin; i < copied.inserts_end; ++i) {
        const std::size_t position = copied.start + next.inserts[i];
        if (position + lz77::kMinMatch > data.size()) continue;
        matcher.replay(lz77::hash_of(lz77::load32(bytes + position)), position);
      }
    }
  }
};

}  // namespace

void TrainedDeflate::compress(std::string_view data, std::string& out, const LineMemo* previous,
                              LineMemo& next) const {
  if (previous != nullptr && previous->codes != id_) previous = nullptr;
  const std::uint32_t kept = unchanged_lines(data, previous);
  const Lines lines(data, previous, kept);
  next.codes = id_;
  next.text.assign(data);
  next.lines.resize(lines.count());
  if (next.inserts.size() < 2 * data.size() + 2) next.inserts.resize(2 * data.size() + 2);
  // The bits are written with 8-byte stores, and read back 8 bytes at a time (BitWriter).
  if (next.bits.size() < bound(data.size()) + 8) next.bits.resize(bound(data.size()) + 8);
  next.lines_copied = 0;
  auto* start = reinterpret_cast<unsigned char*>(next.bits.data());
  std::memcpy(start, header_bytes_.data(), header_bytes_.size());
  LineEncoder encoder{
      data,
      previous,
      lines,
      next,
      start,
      deflate_format::EncodingSink{
          deflate_format::BitWriter(start + header_bytes_.size(), header_tail_, header_tail_bits_),
          literal_length_, lengths_, distances_},
      lz77::Matcher(data)};
  encoder.run(kept);
  encoder.sink.writer.put(literal_length_[deflate_format::kEndOfBlock]);
  next.bytes = static_cast<std::size_t>(encoder.sink.writer.finish() - start);
  out.append(next.bits.data(), next.bytes);
}

}  // namespace hwperf
