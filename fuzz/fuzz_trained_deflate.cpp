// libFuzzer target: TrainedDeflate must encode any input with codes trained on any sample, and
// zlib's inflate must give the input back, also when the input is encoded with the memo of the
// sample (lines copied from it) and then with its own, and when the sample with one line replaced
// by the input, then the sample again, are each encoded with the memo of the one before. The
// first byte splits the rest into sample and input and picks the line.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <zlib.h>

#include "exporter/compression/trained_deflate.h"

namespace {

std::string inflate_raw(const std::string& compressed, std::size_t expected_size) {
  z_stream stream{};
  if (inflateInit2(&stream, -15) != Z_OK) std::abort();
  std::string out(expected_size + 1, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&stream, Z_FINISH);
  // One whole stream, nothing after its last block.
  if (rc != Z_STREAM_END || stream.avail_in != 0) std::abort();
  out.resize(stream.total_out);
  inflateEnd(&stream);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t split = bytes.size() * data[0] / 255;
  const hwperf::TrainedDeflate codes(bytes.substr(0, split));
  const std::string input(bytes.substr(split));
  std::string compressed;
  codes.compress(input, compressed);
  if (compressed.size() > codes.bound(input.size())) std::abort();
  if (inflate_raw(compressed, input.size()) != input) std::abort();
  hwperf::LineMemo sample_memo;
  hwperf::LineMemo input_memo;
  hwperf::LineMemo again_memo;
  std::string unused;
  codes.compress(bytes.substr(0, split), unused, nullptr, sample_memo);
  for (const hwperf::LineMemo* previous : {&sample_memo, &input_memo}) {
    std::string with_memo;
    codes.compress(input, with_memo, previous, previous == &sample_memo ? input_memo : again_memo);
    if (with_memo.size() > codes.bound(input.size())) std::abort();
    if (inflate_raw(with_memo, input.size()) != input) std::abort();
  }
  // A memo copies lines only from a text that is mostly the same line for line, which two halves
  // of a fuzzer's input seldom are: the sample with one of its lines replaced by the input, then
  // the sample again, each with the memo of the one before.
  const std::string_view sample = bytes.substr(0, split);
  std::size_t line_start = 0;
  for (std::size_t line = data[0] % 16; line > 0 && line_start < sample.size(); --line) {
    const std::size_t newline = sample.find('\n', line_start);
    line_start = newline == std::string_view::npos ? sample.size() : newline + 1;
  }
  const std::size_t line_end = std::min(sample.find('\n', line_start), sample.size());
  const std::string edited =
      std::string(sample.substr(0, line_start)) + input + std::string(sample.substr(line_end));
  hwperf::LineMemo edited_memo;
  const hwperf::LineMemo* previous = &sample_memo;
  for (const std::string& text : {edited, std::string(sample)}) {
    hwperf::LineMemo& next = previous == &sample_memo ? edited_memo : again_memo;
    std::string with_memo;
    codes.compress(text, with_memo, previous, next);
    if (inflate_raw(with_memo, text.size()) != text) std::abort();
    previous = &next;
  }
  return 0;
}
