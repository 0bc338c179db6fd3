// TrainedDeflate is checked against zlib's inflate, the decoder Prometheus' own (Go's
// compress/flate) agrees with, on inputs chosen to reach every part of the format: no input,
// literals only, every byte value, the longest match, the farthest distance and one past it.
#include "tests/catch.hpp"

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <zlib.h>

#include "exporter/exposition.h"
#include "exporter/compression/gzip.h"
#include "exporter/compression/trained_deflate.h"
#include "tests/support/support.h"

using namespace hwperf;

namespace {

std::string deflate_with(const TrainedDeflate& codes, const std::string& data) {
  std::string out;
  codes.compress(data, out);
  return out;
}

std::string zlib_level_1_raw(const std::string& data) {
  z_stream stream{};
  REQUIRE(deflateInit2(&stream, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&stream, Z_FINISH) == Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// An exposition like a RAPL scrape's, its values drawn from `seed`.
std::string rapl_like_exposition(unsigned seed) {
  std::mt19937 random(seed);
  std::string text;
  for (const char* domain : {"package", "core", "uncore", "dram"}) {
    text += std::string("# HELP hwperf_rapl_") + domain +
            "_joules_total Energy used by the domain since the exporter started.\n";
    text += std::string("# TYPE hwperf_rapl_") + domain + "_joules_total counter\n";
    for (int package = 0; package < 4; ++package) {
      text += std::string("hwperf_rapl_") + domain + "_joules_total{package=\"" +
              std::to_string(package) + "\"} " + std::to_string(random() % 100000) + "." +
              std::to_string(random() % 1000000) + "\n";
    }
  }
  return text;
}

std::string random_bytes(std::size_t size, unsigned seed) {
  std::mt19937 random(seed);
  std::string out(size, '\0');
  for (auto& byte : out) byte = static_cast<char>(random() & 0xFF);
  return out;
}

}  // namespace

TEST_CASE("trained deflate output inflates to its input, whatever the codes were trained on",
          "[exposition][deflate]") {
  std::string every_byte;
  for (int value = 0; value < 256; ++value) every_byte += static_cast<char>(value);
  // A random piece at 0 and again 32768 bytes later, deflate's farthest distance, with runs of
  // one byte between (matched at distance 1, so nothing else lands in the piece's hash slot).
  const std::string piece = random_bytes(200, 7);
  const std::string window_edge = piece + std::string(32768 - piece.size(), 'x') + piece;
  const std::vector<std::string> inputs = {
      "",
      "a",
      "abc",
      every_byte,
      std::string(100000, 'x'),  // matches of 258 at distance 1
      rapl_like_exposition(1),
      random_bytes(200000, 3),  // literals only, longer than any window or hash table
      window_edge,
      // and a third 32769 bytes after the second, one past the farthest distance
      window_edge + std::string(32769 - piece.size(), 'x') + piece,
  };
  const std::vector<std::string> samples = {"", rapl_like_exposition(2), random_bytes(4096, 5),
                                            std::string(1000, '\0')};
  for (std::size_t s = 0; s < samples.size(); ++s) {
    CAPTURE(s);
    const TrainedDeflate codes(samples[s]);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      CAPTURE(i, inputs[i].size());
      const std::string compressed = deflate_with(codes, inputs[i]);
      CHECK(compressed.size() <= codes.bound(inputs[i].size()));
      CHECK(test::inflate_raw(compressed) == inputs[i]);
      // The same input gives the same output: nothing is left over from the input before.
      CHECK(deflate_with(codes, inputs[i]) == compressed);
    }
  }
}

TEST_CASE("a match is taken at deflate's farthest distance and not one byte past it",
          "[exposition][deflate]") {
  const TrainedDeflate codes("");
  const std::string piece = random_bytes(200, 9);
  const auto at_distance = [&piece](std::size_t distance) {
    return piece + std::string(distance - piece.size(), 'x') + piece;
  };
  const std::string farthest = deflate_with(codes, at_distance(32768));
  const std::string past = deflate_with(codes, at_distance(32769));
  CHECK(test::inflate_raw(farthest) == at_distance(32768));
  CHECK(test::inflate_raw(past) == at_distance(32769));
  // The second piece costs a few bytes as one match, and about its own size as literals.
  CAPTURE(farthest.size(), past.size());
  CHECK(past.size() > farthest.size() + piece.size() / 2);
}

TEST_CASE("codes trained on one scrape compress the next about as tightly as zlib level 1",
          "[exposition][deflate]") {
  const TrainedDeflate codes(rapl_like_exposition(10));
  for (unsigned seed = 11; seed < 14; ++seed) {
    const std::string next = rapl_like_exposition(seed);
    const std::string ours = deflate_with(codes, next);
    const std::string zlib = zlib_level_1_raw(next);
    CAPTURE(next.size(), ours.size(), zlib.size());
    CHECK(test::inflate_raw(ours) == next);
    CHECK(ours.size() < next.size() / 2);
    CHECK(static_cast<double>(ours.size()) <= 1.15 * static_cast<double>(zlib.size()));
  }
}

TEST_CASE("a prefixed gzip stream stays whole across retraining on rests that change",
          "[exposition][deflate]") {
  const std::string prefix = "# HELP hwperf_build_info Build.\n# TYPE hwperf_build_info gauge\n";
  const PrefixedGzip gzip(prefix);
  // The first rest trains the codes; later ones differ (binary, then text again) and pass the
  // retraining point, where the codes are built from that rest.
  for (std::uint64_t call = 0; call < PrefixedGzip::kRetrainEvery + 3; ++call) {
    const std::string rest = call % 100 == 50 ? random_bytes(3000, static_cast<unsigned>(call))
                                              : rapl_like_exposition(static_cast<unsigned>(call));
    INFO("call " << call);
    REQUIRE(test::gunzip(gzip.compress(rest)) == prefix + rest);
  }
}

namespace {

// `text` with the value of every `every`-th sample line replaced by `value` (a scrape where
// some counters moved, their digits' count with them).
std::string with_values(const std::string& text, std::size_t every, const std::string& value) {
  std::string out;
  std::size_t line = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    std::string_view row(text.data() + at, end - at);
    if (!row.empty() && row.front() != '#' && line++ % every == 0) {
      row = row.substr(0, row.rfind(' ') + 1);
      out.append(row).append(value);
    } else {
      out.append(row);
    }
    if (end < text.size()) out += '\n';
    at = end + 1;
  }
  return out;
}

std::string with_memo(const TrainedDeflate& codes, const std::string& data,
                      const LineMemo* previous, LineMemo& next) {
  std::string out;
  codes.compress(data, out, previous, next);
  return out;
}

}  // namespace

TEST_CASE("lines unchanged since the last text are copied, and every text inflates whole",
          "[exposition][deflate]") {
  const TrainedDeflate codes(rapl_like_exposition(20));
  const std::string first = rapl_like_exposition(21);
  LineMemo memo;
  const std::string encoded = with_memo(codes, first, nullptr, memo);
  CHECK(test::inflate_raw(encoded) == first);
  CHECK(memo.lines_copied == 0);
  // The same text again: every line copied, the output byte for byte what a parse writes.
  LineMemo again;
  CHECK(with_memo(codes, first, &memo, again) == deflate_with(codes, first));
  CHECK(again.lines.size() > 20);
  CHECK(again.lines_copied == again.lines.size());
  // Texts that move away from it in steps, each encoded with the memo of the one before: values
  // that change (longer, shorter), lines added and taken away at the start, in the middle and at
  // the end, a text of another kind, and nothing.
  const std::vector<std::string> texts = {
      with_values(first, 3, "7"),
      with_values(first, 3, "123456.789012"),
      with_values(first, 5, "0"),
      "# HELP hwperf_new A family before the others.\n" + first,
      first.substr(0, first.size() / 2) + "hwperf_inserted_total 1\n" +
          first.substr(first.size() / 2),
      first + "hwperf_added_total 2\n",
      first.substr(0, first.size() - 40),
      random_bytes(3000, 21),
      first,
      "",
      first,
      std::string(5000, '\n'),
      first,
  };
  const LineMemo* previous = &again;
  std::vector<LineMemo> memos(texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    CAPTURE(i, texts[i].size());
    const std::string compressed = with_memo(codes, texts[i], previous, memos[i]);
    CHECK(compressed.size() <= codes.bound(texts[i].size()));
    REQUIRE(test::inflate_raw(compressed) == texts[i]);
    previous = &memos[i];
  }
  // A value that moved costs the lines whose tokens read it (its own, the next, the HELP lines
  // that copy from a HELP line above it) and those parsed until a parse ends where the memo's
  // line did; most lines are copied.
  LineMemo moved;
  const std::string one_moved = with_values(first, 1000, "42");
  CHECK(test::inflate_raw(with_memo(codes, one_moved, &again, moved)) == one_moved);
  CAPTURE(moved.lines_copied, moved.lines.size());
  CHECK(moved.lines_copied * 2 > moved.lines.size());
  CHECK(moved.lines_copied < moved.lines.size());
}

// The cases where a line is the same text as last time and yet its last bits would be wrong: a
// line it copies from changed with its length kept (a back-reference to other bytes), a line
// between it and its source changed length (the distance moved), the line its last match runs
// into changed, and the last line lost or gained its newline. Then a long chain of random line
// edits, each text encoded with the memo of the one before, checked whole.
TEST_CASE(
    "a line copied from the memo reads only what it read before, and a chain of random "
    "line edits inflates whole",
    "[exposition][deflate]") {
  const std::string source = "alpha beta gamma delta epsilon zeta\n";
  const std::string filler = "0123\n";
  const std::string base = source + filler + filler + "x " + source + "tail line one\n";
  const TrainedDeflate codes(base);
  LineMemo memo;
  REQUIRE(test::inflate_raw(with_memo(codes, base, nullptr, memo)) == base);
  const std::vector<std::string> edits = {
      "alpha beta gamma delta epsilon zetA\n" + filler + filler + "x " + source + "tail line one\n",
      source + "01234\n" + filler + "x " + source + "tail line one\n",
      source + filler + filler + "x alpha beta gamma delta epsilon zeta\ntail line two\n",
      source + filler + filler + "x " + source + "tail line one",
      source + filler + "x " + source + filler + "tail line one\n",
  };
  for (std::size_t i = 0; i < edits.size(); ++i) {
    CAPTURE(i);
    LineMemo next;
    REQUIRE(test::inflate_raw(with_memo(codes, edits[i], &memo, next)) == edits[i]);
    CHECK(next.lines_copied > 0);
    LineMemo back;
    REQUIRE(test::inflate_raw(with_memo(codes, base, &next, back)) == base);
  }

  const std::vector<std::string> pieces = {"# HELP hwperf_a A.\n",
                                           "hwperf_a{cpu=\"1\"} 12\n",
                                           "hwperf_a{cpu=\"1\"} 123\n",
                                           "hwperf_a{cpu=\"2\"} 12\n",
                                           "x\n",
                                           "\n",
                                           "hwperf_a{cpu=\"1\"} 12"};
  std::mt19937 random(7);
  std::vector<std::string> lines(40, pieces[1]);
  LineMemo memos[2];
  const LineMemo* previous = nullptr;
  std::size_t copied = 0;
  std::size_t encoded = 0;
  for (int step = 0; step < 400; ++step) {
    CAPTURE(step);
    const std::size_t edits_now = 1 + random() % 3;
    for (std::size_t e = 0; e < edits_now; ++e) {
      const std::size_t at = random() % (lines.size() + 1);
      const std::string& piece = pieces[random() % pieces.size()];
      const auto where = lines.begin() + static_cast<std::ptrdiff_t>(at);
      const auto kind = random() % 3;  // insert, replace, erase
      if (kind == 0) {
        lines.insert(where, piece);
      } else if (at < lines.size()) {
        if (kind == 1)
          *where = piece;
        else
          lines.erase(where);
      }
    }
    std::string text;
    for (const auto& line : lines) text += line;
    LineMemo& next = memos[step % 2];
    REQUIRE(test::inflate_raw(with_memo(codes, text, previous, next)) == text);
    copied += next.lines_copied;
    encoded += next.lines.size();
    previous = &next;
  }
  // Many lines copied (half here): the chain went through the memo, not around it.
  CAPTURE(copied, encoded);
  CHECK(copied * 4 > encoded);
}

TEST_CASE("a memo made with other codes is not used", "[exposition][deflate]") {
  const TrainedDeflate codes(rapl_like_exposition(30));
  const TrainedDeflate other(random_bytes(4096, 30));
  const std::string text = rapl_like_exposition(31);
  LineMemo memo;
  with_memo(other, text, nullptr, memo);
  LineMemo next;
  const std::string compressed = with_memo(codes, text, &memo, next);
  CHECK(next.lines_copied == 0);
  CHECK(compressed == deflate_with(codes, text));
  CHECK(test::inflate_raw(compressed) == text);
}

TEST_CASE("a prefixed gzip stream keeps a memo of small rests only, and pauses it where lines move",
          "[exposition][deflate]") {
  const std::string prefix = "# HELP hwperf_build_info Build.\n# TYPE hwperf_build_info gauge\n";
  const PrefixedGzip gzip(prefix);
  const std::string rest = rapl_like_exposition(40);
  // Every rest whole, whether copied from the last, parsed anew, or too large for a memo.
  const std::vector<std::string> rests = {rest,
                                          rest,
                                          with_values(rest, 1, "9"),
                                          with_values(rest, 1, "10"),
                                          rest,
                                          std::string(PrefixedGzip::kMemoLimit, 'x') + rest,
                                          rest};
  for (std::size_t i = 0; i < rests.size(); ++i) {
    CAPTURE(i);
    REQUIRE(test::gunzip(gzip.compress(rests[i])) == prefix + rests[i]);
  }
}

TEST_CASE("concurrent compressions share codes and memos across retraining",
          "[deflate][concurrency]") {
  const std::string prefix = "# HELP hwperf_build_info Build.\n# TYPE hwperf_build_info gauge\n";
  const PrefixedGzip gzip(prefix);
  const std::string rest = rapl_like_exposition(50);
  // Past two retrainings: the codes, the memo and its spare are replaced while other threads
  // compress with the ones before. Each thread moves a value of its own in most rests, so that
  // each copies most lines of the memo another thread left and parses the rest.
  constexpr int kThreads = 4;
  constexpr std::uint64_t kEach = PrefixedGzip::kRetrainEvery * 5 / 8;
  std::atomic<std::uint64_t> whole{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint64_t i = 0; i < kEach; ++i) {
        const std::string text =
            i % 3 == 0 ? rest
                       : with_values(rest, 1000 + static_cast<std::size_t>(t), std::to_string(i));
        if (test::gunzip(gzip.compress(text)) == prefix + text) ++whole;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(whole == kThreads * kEach);
}
