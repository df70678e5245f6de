// The loader tested by its properties: random configurations (dataset sizes
// including 0, 1, 2 and primes; batch sizes including 1 and larger than the
// dataset; world sizes up to 64 with every rank; drop_last; every order;
// thread, slot, task and in-flight counts; read backends; on_error with random
// bad samples; seeks, resumes and destruction mid-epoch; host and conversion
// delivery), each checked against a plain model of the plan:
//   - an epoch has the model's batch count and sizes on every rank;
//   - the ranks' samples together are the dataset, each sample as often as
//     DistributedSampler's wrap-around padding repeats it (once each under
//     drop_last, at most);
//   - sequential order is the model's exact order;
//   - every delivered sample holds its index's bytes and label;
//   - a bad sample fails exactly its batch under fail, and is never delivered
//     under skip (batch sizes hold);
//   - the batches are a function of the behaviour options alone: other
//     performance options, a resume from a saved position, and a seek give
//     the same batches;
//   - destroying the loader mid-epoch returns.
// A watchdog ends the process with the configuration's seed when one hangs.
//
// Cases: STOKE_PROPERTY_CASES (default 300 in release, 25 under a sanitizer,
// 3000 with STOKE_SLOW=1). Replay one: STOKE_PROPERTY_SEED=<seed>.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "stoke/loader.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

using testing::SampleByte;
using testing::SampleLabel;

constexpr int kRows = 2;
constexpr int kCols = 3;
constexpr size_t kSampleBytes = kRows * kCols;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kDefaultCases = 25;
constexpr int kWatchdogSeconds = 300;
#else
constexpr int kDefaultCases = 300;
constexpr int kWatchdogSeconds = 60;
#endif

// One random configuration: the behaviour (which decides the batches), and two
// sets of performance options that must not change them.
struct Config {
  uint64_t seed = 0;
  uint64_t n = 0;
  bool file_per_sample = false;  // a list of .npy files (bad ones possible), else IDX
  std::set<uint64_t> bad;        // truncated samples (file per sample only)
  LoaderOptions behaviour;
  LoaderOptions other;  // behaviour + other performance options and delivery
  int epochs = 2;

  std::string Describe() const {
    std::ostringstream s;
    const LoaderOptions& o = behaviour;
    s << "seed " << seed << ": n " << n << (file_per_sample ? " npy files" : " IDX") << ", "
      << bad.size() << " bad, batch " << o.batch_size << ", order " << OrderName(o.order)
      << " (block " << o.block_samples << ", window " << o.window_bytes << " B x "
      << o.group_windows << "), world " << o.world_size << ", drop_last " << o.drop_last
      << ", on_error " << (o.on_error == ErrorPolicy::kSkip ? "skip" : "fail") << ", threads "
      << o.read_threads << "/" << o.decode_threads << " vs " << other.read_threads << "/"
      << other.decode_threads << ", io " << IoBackendName(o.io) << " vs " << IoBackendName(other.io)
      << ", slots " << o.ring_slots << " vs " << other.ring_slots << ", tasks "
      << o.samples_per_task << " vs " << other.samples_per_task << ", in flight "
      << o.reads_in_flight << " vs " << other.reads_in_flight << ", dtype "
      << DTypeName(other.output_dtype);
    return s.str();
  }
};

Config Draw(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](auto... values) {
    const std::vector<int64_t> v{static_cast<int64_t>(values)...};
    return v[rng() % v.size()];
  };
  auto uniform = [&](int64_t lo, int64_t hi) {  // [lo, hi]
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  Config c;
  c.seed = seed;
  c.n = static_cast<uint64_t>(rng() % 4 == 0 ? pick(0, 1, 2, 3, 5, 7, 13, 31, 97, 101)
                                             : uniform(1, 200));
  c.file_per_sample = rng() % 4 == 0;
  if (c.file_per_sample) c.n = std::min<uint64_t>(c.n, 60);
  LoaderOptions& o = c.behaviour;
  o.batch_size = rng() % 3 == 0
                     ? pick(1, 2, 3, static_cast<int64_t>(c.n) + 1, static_cast<int64_t>(c.n) + 7)
                     : uniform(1, std::max<int64_t>(1, static_cast<int64_t>(c.n)));
  o.batch_size = std::max<int64_t>(o.batch_size, 1);
  o.order = static_cast<Order>(rng() % (c.file_per_sample ? 3 : 4));
  o.seed = rng();
  o.block_samples = uniform(1, static_cast<int64_t>(c.n) + 3);
  o.window_bytes = static_cast<uint64_t>(uniform(1, 40)) * kSampleBytes;
  o.group_windows = static_cast<int>(uniform(1, 4));
  o.world_size = static_cast<int>(rng() % 5 == 0 ? uniform(1, 64) : uniform(1, 8));
  o.drop_last = rng() % 3 == 0;
  if (c.file_per_sample && c.n >= 4 && rng() % 2 == 0) {
    const uint64_t count = 1 + rng() % (c.n / 4);
    while (c.bad.size() < count) c.bad.insert(rng() % c.n);
    o.on_error = rng() % 2 == 0 ? ErrorPolicy::kSkip : ErrorPolicy::kFail;
    // Under skip a rank replaces a bad sample from its own epoch; with at most
    // n/4 bad samples and at least n/2 per rank, every rank has good ones
    // within max_refill_attempts (a rank of only bad samples fails, as
    // documented, and is left to the examples' tests).
    if (o.on_error == ErrorPolicy::kSkip) o.world_size = std::min(o.world_size, 2);
  }
  o.read_threads = static_cast<int>(uniform(1, 3));
  o.decode_threads = static_cast<int>(uniform(0, 2));
  o.ring_slots = rng() % 2 == 0 ? 0 : static_cast<int>(uniform(2, 6));
  o.samples_per_task = rng() % 2 == 0 ? 0 : static_cast<int>(uniform(1, 5));
  o.reads_in_flight = rng() % 2 == 0 ? 0 : static_cast<int>(uniform(1, 16));
  o.io = static_cast<IoBackend>(rng() % 4);
  if (c.file_per_sample && o.io == IoBackend::kMmap) o.io = IoBackend::kAuto;
  c.other = o;
  c.other.read_threads = static_cast<int>(uniform(1, 4));
  c.other.decode_threads = static_cast<int>(uniform(0, 2));
  c.other.ring_slots = rng() % 2 == 0 ? 0 : static_cast<int>(uniform(2, 6));
  c.other.samples_per_task = rng() % 2 == 0 ? 0 : static_cast<int>(uniform(1, 5));
  c.other.reads_in_flight = rng() % 2 == 0 ? 0 : static_cast<int>(uniform(1, 16));
  c.other.io = static_cast<IoBackend>(rng() % 4);
  if (c.file_per_sample && c.other.io == IoBackend::kMmap) c.other.io = IoBackend::kPread;
  if (rng() % 3 == 0) c.other.output_dtype = DType::kFloat32;  // the copy engine's host device
  return c;
}

// The plan's model: samples and batches per rank and epoch.
struct Model {
  int64_t samples_per_rank = 0;
  int64_t batches = 0;
  int64_t BatchSize(int64_t b, int64_t batch_size) const {
    return std::min(batch_size, samples_per_rank - b * batch_size);
  }
};

Model ModelOf(uint64_t n, const LoaderOptions& o) {
  Model m;
  const auto nn = static_cast<int64_t>(n);
  m.samples_per_rank = o.drop_last ? nn / o.world_size : (nn + o.world_size - 1) / o.world_size;
  m.batches = o.drop_last ? m.samples_per_rank / o.batch_size
                          : (m.samples_per_rank + o.batch_size - 1) / o.batch_size;
  return m;
}

// What one rank's loader delivered in an epoch: per batch, its indices, or
// the error code it failed with (indices empty).
struct Delivered {
  std::vector<std::vector<uint64_t>> indices;
  std::vector<StatusCode> errors;
  friend bool operator==(const Delivered& a, const Delivered& b) {
    return a.indices == b.indices && a.errors == b.errors;
  }
};

// Checks each sample's bytes and label; records the batch.
void Record(const Config& c, const Batch& b, Delivered* out) {
  std::vector<uint64_t> indices(b.indices().begin(), b.indices().end());
  for (int64_t s = 0; s < b.size(); ++s) {
    const uint64_t index = indices[s];
    ASSERT_LT(index, c.n) << c.Describe();
    EXPECT_EQ(c.bad.count(index), 0u) << "bad sample " << index << " delivered; " << c.Describe();
    EXPECT_EQ(b.labels()[s], SampleLabel(index)) << c.Describe();
    for (size_t j = 0; j < kSampleBytes; ++j) {
      const uint8_t want = SampleByte(index, j);
      if (b.dtype() == DType::kFloat32) {
        ASSERT_FLOAT_EQ(b.data<float>()[s * kSampleBytes + j], want / 255.0f) << c.Describe();
      } else {
        ASSERT_EQ(b.data<uint8_t>()[s * kSampleBytes + j], want) << c.Describe();
      }
    }
  }
  out->indices.push_back(std::move(indices));
  out->errors.push_back(StatusCode::kOk);
}

// Batches [from, to) of `epoch` through Next.
Delivered Take(const Config& c, Loader& loader, int64_t epoch, int64_t from, int64_t to) {
  Delivered d;
  EXPECT_EQ(loader.position(), (Position{epoch, from})) << c.Describe();
  for (int64_t b = from; b < to; ++b) {
    StatusOr<Batch> batch = loader.Next();
    if (!batch.ok()) {
      EXPECT_EQ(batch.status().code(), StatusCode::kDataLoss) << batch.status() << c.Describe();
      d.indices.emplace_back();
      d.errors.push_back(batch.status().code());
      continue;
    }
    EXPECT_TRUE(static_cast<bool>(*batch)) << "an epoch ended early; " << c.Describe();
    if (!*batch) break;
    EXPECT_EQ(batch->epoch(), epoch);
    EXPECT_EQ(batch->index(), b);
    Record(c, *batch, &d);
  }
  return d;
}

std::unique_ptr<Loader> OpenRank(const Config& c, const std::shared_ptr<Dataset>& d,
                                 LoaderOptions o, int rank) {
  o.rank = rank;
  auto loader = Loader::Open(d, o);
  EXPECT_TRUE(loader.ok()) << loader.status() << "; " << c.Describe();
  return loader.ok() ? std::move(loader).value() : nullptr;
}

// Makes the dataset; returns null when the configuration's dataset is empty.
std::shared_ptr<Dataset> MakeDataset(const Config& c, const testing::TempDir& dir) {
  if (c.n == 0) return nullptr;
  if (!c.file_per_sample) {
    testing::WriteIdxSplit(dir, c.n, kRows, kCols);
    auto d = OpenIdxSplit(dir.path(), "train");
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : nullptr;
  }
  const std::string list = testing::WriteNpyList(dir, c.n, kRows, kCols);
  for (uint64_t i : c.bad) {
    const std::string path = dir.Join("s" + std::to_string(i) + ".npy");
    std::vector<uint8_t> bytes = testing::ReadFileBytes(path);
    bytes.resize(bytes.size() - 1);
    testing::WriteFile(path, bytes);
  }
  auto d = OpenList({.list_path = list});
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *d : nullptr;
}

void CheckConfig(const Config& c) {
  testing::TempDir dir;
  const LoaderOptions& o = c.behaviour;
  if (c.n == 0) {
    // An empty dataset: the built-in formats refuse one at open (IDX of 0).
    testing::WriteIdxSplit(dir, 0, kRows, kCols);
    auto d = OpenIdxSplit(dir.path(), "train");
    if (d.ok()) {
      auto loader = Loader::Open(*d, o);
      ASSERT_FALSE(loader.ok()) << c.Describe();
      EXPECT_EQ(loader.status().code(), StatusCode::kInvalidArgument) << loader.status();
    }
    return;
  }
  std::shared_ptr<Dataset> d = MakeDataset(c, dir);
  ASSERT_NE(d, nullptr) << c.Describe();
  const Model m = ModelOf(c.n, o);
  if (m.batches == 0) {
    // drop_last with fewer samples per rank than a batch: refused, naming it.
    auto loader = Loader::Open(d, o);
    ASSERT_FALSE(loader.ok()) << c.Describe();
    EXPECT_EQ(loader.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(loader.status().message().find("batch_size"), std::string::npos);
    return;
  }

  std::mt19937_64 rng(c.seed ^ 0x5eed);
  // Every rank, every epoch, through both sets of performance options.
  std::map<uint64_t, int64_t> counts;  // epoch 0, all ranks
  for (int rank = 0; rank < o.world_size; ++rank) {
    std::unique_ptr<Loader> a = OpenRank(c, d, o, rank);
    std::unique_ptr<Loader> b = OpenRank(c, d, c.other, rank);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->batches_per_epoch(), m.batches) << c.Describe();
    ASSERT_EQ(a->samples_per_epoch(), m.samples_per_rank) << c.Describe();
    std::vector<Delivered> epochs;
    for (int64_t e = 0; e < c.epochs; ++e) {
      const Delivered da = Take(c, *a, e, 0, m.batches);
      const Delivered db = Take(c, *b, e, 0, m.batches);
      EXPECT_EQ(da, db) << "other performance options gave other batches; rank " << rank
                        << " epoch " << e << "; " << c.Describe();
      // The epoch ends with an empty batch.
      auto end = a->Next();
      EXPECT_TRUE(end.ok() && !*end) << c.Describe();
      (void)b->Next();
      ASSERT_EQ(da.indices.size(), static_cast<size_t>(m.batches)) << c.Describe();
      for (int64_t k = 0; k < m.batches; ++k) {
        const int64_t want = m.BatchSize(k, o.batch_size);
        if (da.errors[k] != StatusCode::kOk) {
          EXPECT_EQ(o.on_error, ErrorPolicy::kFail) << c.Describe();
          continue;
        }
        EXPECT_EQ(static_cast<int64_t>(da.indices[k].size()), want) << c.Describe();
        if (o.order == Order::kSequential && o.on_error == ErrorPolicy::kFail) {
          for (int64_t s = 0; s < want; ++s) {
            const int64_t p = k * o.batch_size + s;
            const uint64_t g = static_cast<uint64_t>(p * o.world_size + rank) % c.n;
            EXPECT_EQ(da.indices[k][s], g) << "position " << p << "; " << c.Describe();
          }
        }
        if (e == 0 && o.on_error == ErrorPolicy::kFail) {
          for (uint64_t i : da.indices[k]) ++counts[i];
        }
      }
      epochs.push_back(da);
    }

    // A resume from a saved position, and a seek back to it, continue exactly.
    const int64_t e = static_cast<int64_t>(rng() % static_cast<uint64_t>(c.epochs));
    const int64_t k = static_cast<int64_t>(rng() % static_cast<uint64_t>(m.batches + 1));
    Delivered tail;
    for (int64_t j = k; j < m.batches; ++j) {
      tail.indices.push_back(epochs[e].indices[j]);
      tail.errors.push_back(epochs[e].errors[j]);
    }
    LoaderOptions resumed = c.other;
    resumed.start = {e, k};
    std::unique_ptr<Loader> r = OpenRank(c, d, resumed, rank);
    ASSERT_TRUE(r);
    EXPECT_EQ(Take(c, *r, e, k, m.batches), tail)
        << "resume at " << e << "/" << k << "; " << c.Describe();
    ASSERT_TRUE(a->Seek({e, k}).ok());
    EXPECT_EQ(Take(c, *a, e, k, m.batches), tail)
        << "seek to " << e << "/" << k << "; " << c.Describe();
    // Destroyed mid-epoch, with reads in flight (a batch must not outlive
    // its loader): returns (the watchdog fails the run if it does not).
    r.reset();
    ASSERT_TRUE(b->Seek({0, 0}).ok());
    { StatusOr<Batch> taken = b->Next(); }
    b.reset();
  }

  // Epoch 0 over all ranks: without drop_last, the dataset, each sample as
  // often as the padding repeats it (positions g of [0, samples_per_rank x
  // world) wrap to g mod n); with it, distinct samples, the full batches'.
  if (o.on_error == ErrorPolicy::kFail && c.bad.empty()) {
    const uint64_t per_rank = o.drop_last ? static_cast<uint64_t>(m.batches * o.batch_size)
                                          : static_cast<uint64_t>(m.samples_per_rank);
    const uint64_t total = per_rank * static_cast<uint64_t>(o.world_size);
    const uint64_t per = total / c.n;
    const uint64_t extra = total % c.n;
    uint64_t more = 0;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < c.n; ++i) {
      const auto it = counts.find(i);
      const int64_t got = it == counts.end() ? 0 : it->second;
      sum += static_cast<uint64_t>(got);
      if (o.drop_last) {
        EXPECT_LE(got, 1) << "sample " << i << "; " << c.Describe();
        continue;
      }
      EXPECT_TRUE(static_cast<uint64_t>(got) == per || static_cast<uint64_t>(got) == per + 1)
          << "sample " << i << " seen " << got << " times; " << c.Describe();
      if (static_cast<uint64_t>(got) == per + 1) ++more;
    }
    EXPECT_EQ(sum, total) << c.Describe();
    if (!o.drop_last) {
      EXPECT_EQ(more, extra) << c.Describe();
    }
  }
}

// Ends the process, naming the configuration, if a case runs past the limit.
class Watchdog {
 public:
  Watchdog() : thread_([this] { Run(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Arm(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu_);
    what_ = what;
    deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(kWatchdogSeconds);
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!done_) {
      cv_.wait_for(lock, std::chrono::milliseconds(200));
      if (!done_ && !what_.empty() && std::chrono::steady_clock::now() > deadline_) {
        std::fprintf(stderr,
                     "LoaderPropertyTest: a case hung for %d s; replay it with "
                     "STOKE_PROPERTY_SEED=%s\n",
                     kWatchdogSeconds, what_.c_str());
        std::fflush(stderr);
        _exit(3);
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string what_;
  std::chrono::steady_clock::time_point deadline_;
  std::thread thread_;
};

TEST(LoaderPropertyTest, RandomConfigurationsMatchThePlansModel) {
  std::vector<uint64_t> seeds;
  if (const char* one = std::getenv("STOKE_PROPERTY_SEED")) {
    seeds.push_back(std::strtoull(one, nullptr, 10));
  } else {
    int cases = kDefaultCases;
    if (const char* slow = std::getenv("STOKE_SLOW"); slow && std::string(slow) == "1") {
      cases = 3000;
    }
    if (const char* n = std::getenv("STOKE_PROPERTY_CASES")) cases = std::atoi(n);
    // A fresh draw each run, printed, so that a failure can be replayed.
    const uint64_t base = std::random_device{}() * 0x9e3779b97f4a7c15ull;
    std::printf("LoaderPropertyTest: %d cases from seed %llu\n", cases,
                static_cast<unsigned long long>(base));
    for (int i = 0; i < cases; ++i) seeds.push_back(base + static_cast<uint64_t>(i));
  }
  Watchdog watchdog;
  for (uint64_t seed : seeds) {
    const Config c = Draw(seed);
    watchdog.Arm(std::to_string(seed) + " (" + c.Describe() + ")");
    SCOPED_TRACE("replay with STOKE_PROPERTY_SEED=" + std::to_string(seed));
    CheckConfig(c);
    if (::testing::Test::HasFailure()) {
      std::printf("LoaderPropertyTest: failed: %s\n", c.Describe().c_str());
      break;  // one failing case is enough to replay
    }
  }
}

}  // namespace
}  // namespace stoke
