// Options resolved once (loader/resolve.h): one test per rule, each naming the
// option it breaks, and the automatic choices Loader::options() then reports.
#include "loader/resolve.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "stoke/loader.h"

namespace stoke::internal {
namespace {

// A dataset of `n` samples of `shape` (uint8) whose other properties a test sets.
class FakeDataset final : public Dataset {
 public:
  FakeDataset(uint64_t n, std::vector<int64_t> shape, bool whole_files = false,
              bool compute_bound = false)
      : n_(n), whole_files_(whole_files), compute_bound_(compute_bound) {
    spec_.shape = std::move(shape);
  }
  uint64_t size() const override { return n_; }
  const SampleSpec& spec() const override { return spec_; }
  uint32_t file_count() const override { return 1; }
  const std::string& file_path(uint32_t) const override { return path_; }
  FileSystem* file_system() const override { return DefaultFileSystem(); }
  SampleLocation Locate(uint64_t index) const override {
    SampleLocation loc;
    loc.offset = index * spec_.bytes();
    loc.length = spec_.bytes();
    loc.whole_file = whole_files_;
    return loc;
  }
  bool decode_is_compute_bound() const override { return compute_bound_; }
  Status Decode(uint64_t, Span<const std::byte>, Span<std::byte>, int64_t*) const override {
    return Status::Ok();
  }
  std::string Describe() const override { return "fake dataset"; }

 private:
  uint64_t n_;
  bool whole_files_;
  bool compute_bound_;
  SampleSpec spec_;
  std::string path_ = "fake";
};

struct Rule {
  const char* name;
  std::function<void(LoaderOptions*)> set;
  const char* message;  // in the InvalidArgument
};

TEST(ResolveOptionsTest, EachRuleNamesItsOption) {
  const FakeDataset dataset(100, {2, 3});
  const std::vector<Rule> rules = {
      {"batch_size >= 1", [](LoaderOptions* o) { o->batch_size = 0; }, "LoaderOptions.batch_size"},
      {"batch_size <= 2^24", [](LoaderOptions* o) { o->batch_size = int64_t{1} << 25; },
       "LoaderOptions.batch_size"},
      {"block_samples >= 1", [](LoaderOptions* o) { o->block_samples = 0; },
       "LoaderOptions.block_samples"},
      {"window_bytes >= 1", [](LoaderOptions* o) { o->window_bytes = 0; },
       "LoaderOptions.window_bytes"},
      {"window_bytes <= 2^36", [](LoaderOptions* o) { o->window_bytes = uint64_t{1} << 37; },
       "LoaderOptions.window_bytes"},
      {"group_windows >= 1", [](LoaderOptions* o) { o->group_windows = 0; },
       "LoaderOptions.group_windows"},
      {"world_size >= 1", [](LoaderOptions* o) { o->world_size = 0; }, "LoaderOptions.world_size"},
      {"rank < world_size",
       [](LoaderOptions* o) {
         o->world_size = 2;
         o->rank = 2;
       },
       "LoaderOptions.rank: 2 is out of range [0, 1]"},
      {"rank >= 0", [](LoaderOptions* o) { o->rank = -1; }, "LoaderOptions.rank"},
      {"max_refill_attempts >= 0", [](LoaderOptions* o) { o->max_refill_attempts = -1; },
       "LoaderOptions.max_refill_attempts"},
      {"start.epoch >= 0", [](LoaderOptions* o) { o->start.epoch = -1; },
       "LoaderOptions.start.epoch"},
      {"start.batch within the epoch", [](LoaderOptions* o) { o->start.batch = 5; },
       "LoaderOptions.start.batch: 5 is outside [0, 4]"},
      {"start.batch >= 0", [](LoaderOptions* o) { o->start.batch = -1; },
       "LoaderOptions.start.batch"},
      {"device.index >= 0", [](LoaderOptions* o) { o->device.index = -1; },
       "LoaderOptions.device.index"},
      {"ring_slots 0 or >= 2", [](LoaderOptions* o) { o->ring_slots = 1; },
       "LoaderOptions.ring_slots"},
      {"read_threads >= 1", [](LoaderOptions* o) { o->read_threads = 0; },
       "LoaderOptions.read_threads"},
      {"reads_in_flight >= 0", [](LoaderOptions* o) { o->reads_in_flight = -1; },
       "LoaderOptions.reads_in_flight"},
      {"samples_per_task >= 0", [](LoaderOptions* o) { o->samples_per_task = -1; },
       "LoaderOptions.samples_per_task"},
      {"decode_threads >= -1", [](LoaderOptions* o) { o->decode_threads = -2; },
       "LoaderOptions.decode_threads"},
      {"device_buffers >= 2", [](LoaderOptions* o) { o->device_buffers = 1; },
       "LoaderOptions.device_buffers"},
      {"trace_events <= 2^28", [](LoaderOptions* o) { o->trace_events = (uint64_t{1} << 28) + 1; },
       "LoaderOptions.trace_events"},
      {"normalisation needs a float dtype", [](LoaderOptions* o) { o->normalize_mean = {0.5f}; },
       "normalize"},
      {"drop_last with fewer samples per rank than a batch",
       [](LoaderOptions* o) {
         o->drop_last = true;
         o->world_size = 4;
         o->batch_size = 26;
       },
       "LoaderOptions.batch_size: an epoch has no batches: 100 samples over world_size 4 give 25 "
       "per rank, fewer than batch_size 26 with drop_last"},
  };
  for (const Rule& rule : rules) {
    LoaderOptions o;
    o.batch_size = 25;  // 4 batches an epoch
    rule.set(&o);
    const StatusOr<ResolvedOptions> r = ResolveOptions(o, dataset, 4);
    ASSERT_FALSE(r.ok()) << rule.name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << rule.name;
    EXPECT_NE(r.status().message().find(rule.message), std::string::npos)
        << rule.name << ": " << r.status();
  }
  // And the options as given, with none of those changes, are fine.
  EXPECT_TRUE(ResolveOptions({.batch_size = 25}, dataset, 4).ok());
}

TEST(ResolveOptionsTest, DatasetsThatCannotBeLoadedAreNamed) {
  struct Case {
    FakeDataset dataset;
    LoaderOptions options;
    const char* message;
  };
  const std::vector<Case> cases = {
      {FakeDataset(0, {2, 3}), {}, "fake dataset: the dataset is empty"},
      {FakeDataset(10, {1, 1, 1, 1, 1, 1, 1, 1, 1}), {}, "samples of rank above 8"},
      {FakeDataset(10, {0}), {}, "samples of 0 bytes"},
      {FakeDataset(10, {4}, /*whole_files=*/true),
       {.order = Order::kQuasiRandom},
       "LoaderOptions.order = quasi: fake dataset: every sample is a file of its own"},
  };
  for (const Case& c : cases) {
    const StatusOr<ResolvedOptions> r = ResolveOptions(c.options, c.dataset, 4);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status();
  }
}

TEST(ResolveOptionsTest, AutomaticChoicesAreMadeHere) {
  // decode_threads = -1: none for a copy, one per core for compute-bound
  // decoding, one fewer with a CUDA device.
  const FakeDataset raw(100, {2, 3});
  const FakeDataset jpeg(100, {2, 3}, false, /*compute_bound=*/true);
  EXPECT_EQ(ResolveOptions({}, raw, 8)->options.decode_threads, 0);
  EXPECT_EQ(ResolveOptions({}, jpeg, 8)->options.decode_threads, 8);
  LoaderOptions cuda;
  cuda.device = {DeviceKind::kCuda, 0};
  EXPECT_EQ(ResolveOptions(cuda, jpeg, 8)->options.decode_threads, 7);
  EXPECT_EQ(ResolveOptions({.decode_threads = 3}, jpeg, 8)->options.decode_threads, 3);
  // The plan and the conversion come with them.
  const StatusOr<ResolvedOptions> r = ResolveOptions({.batch_size = 10,
                                                      .order = Order::kFullShuffle,
                                                      .seed = 9,
                                                      .rank = 1,
                                                      .world_size = 3,
                                                      .output_dtype = DType::kFloat32},
                                                     raw, 8);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->plan.dataset_size, 100u);
  EXPECT_EQ(r->plan.order, Order::kFullShuffle);
  EXPECT_EQ(r->plan.seed, 9u);
  EXPECT_EQ(r->plan.rank, 1);
  EXPECT_EQ(r->plan.world_size, 3);
  EXPECT_TRUE(r->convert.converts());
  // Sizes, once the backend is known.
  LoaderOptions o = r->options;
  Sizing s;
  s.samples_per_task = 5;
  s.tickets = 6;
  s.ring_slots = 9;
  ResolveSizes(s, &o);
  EXPECT_EQ(o.ring_slots, 9);
  EXPECT_EQ(o.samples_per_task, 5);
  EXPECT_EQ(o.reads_in_flight, 30);
}

TEST(ResolveOptionsTest, TheLoaderReportsTheResolvedOptions) {
  std::vector<std::byte> bytes(100 * 6);
  auto d =
      FromMemory({DType::kUint8, {2, 3}}, std::move(bytes), std::vector<int64_t>(100, 0), "memory");
  ASSERT_TRUE(d.ok()) << d.status();
  auto loader = Loader::Open(*d, {.batch_size = 10});
  ASSERT_TRUE(loader.ok()) << loader.status();
  const LoaderOptions& o = (*loader)->options();
  EXPECT_GE(o.ring_slots, 2);        // was 0: auto
  EXPECT_GE(o.decode_threads, 0);    // was -1: auto
  EXPECT_GE(o.samples_per_task, 1);  // was 0: auto
  EXPECT_GE(o.reads_in_flight, o.samples_per_task);
  EXPECT_EQ(o.batch_size, 10);
}

}  // namespace
}  // namespace stoke::internal
