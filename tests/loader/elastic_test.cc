// Elastic resume, by its properties: random chains of restarts (dataset size,
// order, world size, batch size, drop_last, how far each split got) checked
// against a plain count of what every split delivered:
//   - every sample of the epoch is delivered, once (not counting padding, the
//     sequence's first elements again that a split's equal counts need), but
//     exactly what the split that ends the epoch drops under drop_last;
//   - the ranks of every split have equal batch counts;
//   - the same world and batch size resumes exactly (the same samples);
//   - in quasi order each rank's positions fall into segments of at most a
//     group's windows, in order (what the window cache reads whole);
//   - a refill under on_error = kSkip (random bad samples) is the one a single
//     rank reading the whole epoch makes: it depends on the sample, not the split.
// Then the loader itself: 4 ranks stop, 3 continue (and with twice the batch
// size), on an IDX dataset whose samples hold their index, in every order.
//
// Cases: STOKE_ELASTIC_CASES (default 20000, 2000 under a sanitizer; 200000 with
// STOKE_SLOW=1). Replay one: STOKE_ELASTIC_SEED=<seed>.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "loader/plan.h"
#include "loader/resolve.h"
#include "stoke/loader.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

using internal::Plan;
using internal::PlanConfig;

// The positions rank `rank` of `config` delivers in batches [from, to) of `epoch`.
std::vector<int64_t> Positions(const Plan& plan, int64_t epoch, int64_t from, int64_t to) {
  std::vector<int64_t> out;
  const int64_t end = std::min(to * plan.config().batch_size, plan.delivered_in(epoch));
  for (int64_t p = from * plan.config().batch_size; p < end; ++p) out.push_back(p);
  return out;
}

// The length of the sequence `plan` splits in `epoch`.
uint64_t SequenceLength(const PlanConfig& c, int64_t epoch) {
  if (epoch != c.split_epoch) return c.dataset_size;
  uint64_t total = 0;
  for (const OrderSpan& s : c.spans) total += static_cast<uint64_t>(s.end - s.begin);
  return total;
}

// Whether rank position p is padding: its element of the sequence, before
// wrapping, lies past the sequence's end.
bool IsPadding(const PlanConfig& c, int64_t per_rank, uint64_t length, int64_t p) {
  const auto up = static_cast<uint64_t>(p);
  const uint64_t unwrapped =
      c.order == Order::kQuasiRandom
          ? static_cast<uint64_t>(c.rank) * static_cast<uint64_t>(per_rank) + up
          : up * static_cast<uint64_t>(c.world_size) + static_cast<uint64_t>(c.rank);
  return unwrapped >= length;
}

PlanConfig RandomSplit(std::mt19937_64& rng, PlanConfig c) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  c.world_size = static_cast<int>(pick(0, 3) == 0 ? pick(1, 40) : pick(1, 8));
  c.batch_size = pick(0, 4) == 0 ? pick(1, 200) : pick(1, 16);
  c.drop_last = pick(0, 3) == 0;
  c.rank = 0;
  return c;
}

struct Chain {
  std::map<uint64_t, int> count;        // sample -> times delivered
  std::map<uint64_t, int> real;         // sample -> times delivered not as padding
  int64_t padding = 0;                  // positions delivered as padding
  int64_t dropped = 0;                  // what the split that ended the epoch dropped
  std::set<uint64_t> bad;               // samples on_error = kSkip replaces
  std::map<uint64_t, uint64_t> refill;  // bad sample -> its replacement, as one rank alone refills
  std::string log;
};

// The first good sample RefillAt offers for the bad one at `position`.
uint64_t Refill(const Plan& plan, int64_t epoch, int64_t position, const std::set<uint64_t>& bad) {
  for (int attempt = 1;; ++attempt) {
    const uint64_t sample = plan.RefillAt(epoch, position, attempt);
    if (bad.count(sample) == 0) return sample;
  }
}

// Runs split `c` (every rank) in `epoch` from batch `from` up to batch `to`
// (clamped to the epoch) and checks its ranks agree and its segments.
void RunSplit(const PlanConfig& c, int64_t epoch, int64_t from, int64_t to, Chain* chain) {
  int64_t batches = -1;
  for (int r = 0; r < c.world_size; ++r) {
    PlanConfig rc = c;
    rc.rank = r;
    const Plan plan(rc);
    if (batches < 0) batches = plan.batches_in(epoch);
    ASSERT_EQ(plan.batches_in(epoch), batches) << "rank " << r << " of " << chain->log;
    const uint64_t length = SequenceLength(rc, epoch);
    for (int64_t p : Positions(plan, epoch, from, to)) {
      const uint64_t sample = plan.SampleAt(epoch, p);
      if (chain->bad.count(sample) != 0) {
        // Replaced as one rank reading the whole order would replace it.
        ASSERT_EQ(Refill(plan, epoch, p, chain->bad), chain->refill.at(sample))
            << "the refill of bad sample " << sample << " depends on the split; " << chain->log;
      }
      ++chain->count[sample];
      if (IsPadding(rc, plan.samples_in(epoch), length, p)) {
        ++chain->padding;
      } else {
        ++chain->real[sample];
      }
    }
    if (c.order == Order::kQuasiRandom && plan.samples_in(epoch) > 0) {
      int64_t last_ordinal = -1;
      for (int64_t p = 0; p < plan.samples_in(epoch);) {
        const internal::Segment s = plan.SegmentAt(epoch, p);
        ASSERT_TRUE(s.begin == p && s.end > p)
            << "segment [" << s.begin << ", " << s.end << ") at " << p << "; " << chain->log;
        ASSERT_GT(s.ordinal, last_ordinal) << chain->log;
        last_ordinal = s.ordinal;
        std::set<uint64_t> windows;
        for (int64_t q = s.begin; q < s.end; ++q) {
          const internal::Segment t = plan.SegmentAt(epoch, q);
          ASSERT_TRUE(t.begin == s.begin && t.end == s.end && t.ordinal == s.ordinal)
              << "position " << q << "; " << chain->log;
          windows.insert(plan.WindowOf(plan.SampleAt(epoch, q)));
        }
        ASSERT_LE(windows.size(), c.group_windows) << chain->log;
        p = s.end;
      }
    }
  }
}

uint64_t CaseCount() {
  if (const char* n = std::getenv("STOKE_ELASTIC_CASES")) return std::strtoull(n, nullptr, 10);
  const char* slow = std::getenv("STOKE_SLOW");
  if (slow != nullptr && std::string(slow) == "1") return 200000;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return 2000;
#else
  return 20000;
#endif
}

void OneCase(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  PlanConfig base;
  base.dataset_size = static_cast<uint64_t>(pick(0, 4) == 0 ? pick(1, 5) : pick(1, 400));
  base.order = static_cast<Order>(pick(0, 3));
  base.seed = static_cast<uint64_t>(pick(0, 1000));
  base.block_samples = static_cast<uint64_t>(pick(1, 40));
  if (base.order == Order::kQuasiRandom) {
    base.window_samples = static_cast<uint64_t>(pick(1, 20));
    base.group_windows = static_cast<uint64_t>(pick(1, 6));
  }
  const int64_t epoch = pick(0, 3);
  Chain chain;
  // A few bad samples (not all), and their replacements in one rank's whole epoch.
  const int64_t bad =
      base.dataset_size > 1 ? pick(0, static_cast<int64_t>(base.dataset_size) / 4) : 0;
  for (int64_t i = 0; i < bad; ++i) {
    chain.bad.insert(static_cast<uint64_t>(pick(0, static_cast<int64_t>(base.dataset_size) - 1)));
  }
  {
    PlanConfig alone = base;
    alone.batch_size = 1;
    const Plan plan(alone);
    for (int64_t p = 0; p < plan.samples_in(epoch); ++p) {
      const uint64_t sample = plan.SampleAt(epoch, p);
      if (chain.bad.count(sample) != 0) chain.refill[sample] = Refill(plan, epoch, p, chain.bad);
    }
  }
  chain.log = "seed " + std::to_string(seed) + " (STOKE_ELASTIC_SEED replays it): n " +
              std::to_string(base.dataset_size) + " order " + std::string(OrderName(base.order));
  PlanConfig c = RandomSplit(rng, base);
  int64_t from = 0;
  const int restarts = static_cast<int>(pick(1, 3));
  for (int stage = 0;; ++stage) {
    const Plan rank0(c);
    const int64_t batches = rank0.batches_in(epoch);
    const bool last = stage == restarts;
    const int64_t to = last ? batches : pick(from, batches);
    chain.log += "; world " + std::to_string(c.world_size) + " batch " +
                 std::to_string(c.batch_size) + (c.drop_last ? " drop_last" : "") + " spans " +
                 std::to_string(c.split_epoch == epoch ? c.spans.size() : 0) + " batches " +
                 std::to_string(from) + ".." + std::to_string(to) + " of " +
                 std::to_string(batches);
    RunSplit(c, epoch, from, to, &chain);
    if (::testing::Test::HasFatalFailure()) return;
    if (last || to == batches) {
      // This split ends the epoch; under drop_last its tail is never delivered.
      const uint64_t length = SequenceLength(c, epoch);
      chain.dropped =
          static_cast<int64_t>(length) -
          (c.drop_last ? c.world_size * rank0.delivered_in(epoch) : static_cast<int64_t>(length));
      if (!last) {
        // A restart at the end resumes nothing of this epoch.
        const PlanConfig next = RandomSplit(rng, base);
        StatusOr<internal::Resumed> r =
            internal::ResolveStart(internal::PositionOf(epoch, to, c), next, "test: ");
        ASSERT_TRUE(r.ok()) << r.status() << "; " << chain.log;
        const bool same = next.world_size == c.world_size && next.batch_size == c.batch_size &&
                          next.drop_last == c.drop_last;
        if (!same) {
          ASSERT_EQ(r->start.epoch, epoch + 1) << chain.log;
        }
      }
      break;
    }
    PlanConfig next = RandomSplit(rng, base);
    if (pick(0, 4) == 0) {  // the same split: exact
      next.world_size = c.world_size;
      next.batch_size = c.batch_size;
      next.drop_last = c.drop_last;
    }
    const Position saved = internal::PositionOf(epoch, to, c);
    // Its text form restores the same position.
    StatusOr<Position> parsed = ParsePosition(PositionToText(saved));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ASSERT_TRUE(parsed->split == saved.split && *parsed == saved) << PositionToText(saved);
    StatusOr<internal::Resumed> r = internal::ResolveStart(*parsed, next, "test: ");
    ASSERT_TRUE(r.ok()) << r.status() << "; " << chain.log;
    const bool same = next.world_size == c.world_size && next.batch_size == c.batch_size &&
                      next.drop_last == c.drop_last;
    if (same) {
      ASSERT_EQ(r->start.epoch, epoch);
      ASSERT_EQ(r->start.batch, to);
      // Exactly the same samples from here: the same plan.
      for (int rank = 0; rank < c.world_size; ++rank) {
        PlanConfig a = c, b = r->plan;
        a.rank = b.rank = rank;
        const Plan pa(a), pb(b);
        for (int64_t p : Positions(pa, epoch, to, pa.batches_in(epoch))) {
          ASSERT_EQ(pa.SampleAt(epoch, p), pb.SampleAt(epoch, p)) << chain.log;
        }
      }
    }
    if (r->start.epoch != epoch) {
      chain.log += "; the epoch is over";
      chain.dropped = 0;
      break;
    }
    c = r->plan;
    from = r->start.batch;
  }
  // Every sample once, but the last split's dropped tail; padding only
  // repeats (a padding position whose sample no rank had delivered yet counts
  // as its delivery: the split after does not deliver it again).
  int64_t extra = 0;
  int64_t missing = 0;
  for (uint64_t i = 0; i < base.dataset_size; ++i) {
    const auto it = chain.count.find(i);
    if (it == chain.count.end()) {
      ++missing;
    } else {
      extra += it->second - 1;
    }
    const auto real = chain.real.find(i);
    ASSERT_LE(real == chain.real.end() ? 0 : real->second, 1)
        << "sample " << i << " delivered twice, not as padding; " << chain.log;
  }
  EXPECT_LE(extra, chain.padding) << chain.log;
  EXPECT_EQ(missing, chain.dropped) << chain.log;
}

TEST(ElasticPlanTest, RandomRestartsDeliverEachSampleOncePlusPaddingLessTheLastDrop) {
  uint64_t cases = CaseCount();
  uint64_t first = std::random_device{}();
  if (const char* s = std::getenv("STOKE_ELASTIC_SEED")) {
    first = std::strtoull(s, nullptr, 10);
    cases = 1;
  }
  std::printf("ElasticPlanTest: %llu cases from seed %llu\n",
              static_cast<unsigned long long>(cases), static_cast<unsigned long long>(first));
  for (uint64_t i = 0; i < cases; ++i) {
    OneCase(first + i);
    if (HasFailure()) {
      std::printf("replay: STOKE_ELASTIC_SEED=%llu\n", static_cast<unsigned long long>(first + i));
      return;
    }
  }
}

TEST(ElasticPlanTest, ARefillDependsOnTheSampleNotTheSplit) {
  for (Order order :
       {Order::kSequential, Order::kFullShuffle, Order::kBlock, Order::kQuasiRandom}) {
    PlanConfig base;
    base.dataset_size = 97;
    base.order = order;
    base.seed = 5;
    base.block_samples = 8;
    base.window_samples = 6;
    base.group_windows = 3;
    // The refill each sample gets on every rank of a split, for attempts 1..3.
    auto refills = [&](int world, int64_t batch, const Position* from) {
      std::map<uint64_t, std::vector<uint64_t>> out;
      PlanConfig c = base;
      c.world_size = world;
      c.batch_size = batch;
      if (from != nullptr) c = internal::ResolveStart(*from, c, "").value().plan;
      for (int r = 0; r < world; ++r) {
        c.rank = r;
        const Plan plan(c);
        for (int64_t p = 0; p < plan.samples_in(1); ++p) {
          std::vector<uint64_t>& got = out[plan.SampleAt(1, p)];
          std::vector<uint64_t> mine;
          for (int a = 1; a <= 3; ++a) mine.push_back(plan.RefillAt(1, p, a));
          if (got.empty()) got = mine;
          EXPECT_EQ(got, mine) << OrderName(order);
        }
      }
      return out;
    };
    const auto four = refills(4, 5, nullptr);
    const auto three = refills(3, 10, nullptr);
    PlanConfig four_config = base;
    four_config.world_size = 4;
    four_config.batch_size = 5;
    const Position saved = internal::PositionOf(1, 2, four_config);
    const auto resumed = refills(3, 7, &saved);
    for (const auto& [sample, choice] : three)
      EXPECT_EQ(four.at(sample), choice) << OrderName(order);
    for (const auto& [sample, choice] : resumed)
      EXPECT_EQ(four.at(sample), choice) << OrderName(order);
  }
}

TEST(PositionTextTest, NamesTheFieldThatIsWrong) {
  PlanConfig c;
  c.dataset_size = 50;
  c.world_size = 4;
  c.batch_size = 3;
  c.split_epoch = 2;
  c.spans = {{1, 4}, {9, 20}};
  const Position p = internal::PositionOf(2, 1, c);
  const std::string text = PositionToText(p);
  EXPECT_EQ(text,
            "stoke-position 1 epoch=2 batch=1 size=50 seed=0 order=sequential block=0 window=0 "
            "group=0 world=4 batch_size=3 drop_last=0 spans=1-4,9-20");
  const struct {
    std::string text;
    std::string error;
  } bad[] = {
      {"position 1 epoch=2", "not a stoke position"},
      {"stoke-position 1 epoch=2", "batch: missing"},
      {text + " epoch=3", "epoch: given twice"},
      {text + " colour=blue", "colour: unknown field"},
      {"stoke-position 1 epoch=x" + text.substr(text.find(" batch=")),
       "epoch: 'x' is not a number"},
      {text.substr(0, text.find("spans=")) + "spans=4-1", "spans: '4-1' is not a span"},
      {text.substr(0, text.find("order=")) + "order=random" + text.substr(text.find(" block=")),
       "order: 'random' is not"},
  };
  for (const auto& b : bad) {
    StatusOr<Position> parsed = ParsePosition(b.text);
    ASSERT_FALSE(parsed.ok()) << b.text;
    EXPECT_NE(parsed.status().message().find(b.error), std::string::npos) << parsed.status();
  }
}

// ---- The loader ----

// What each rank of `world` loaders delivers of `epoch` from `start`, stopping
// after `batches` batches (-1: the epoch's end); the sample indices, and rank
// 0's position after them (every rank's, checked equal).
struct Delivery {
  std::vector<uint64_t> samples;
  Position position;
};

Delivery Deliver(const std::shared_ptr<const Dataset>& dataset, LoaderOptions o, int world,
                 int64_t epoch, int64_t batches) {
  Delivery d;
  std::string text;
  for (int r = 0; r < world; ++r) {
    o.rank = r;
    o.world_size = world;
    auto loader = Loader::Open(dataset, o);
    EXPECT_TRUE(loader.ok()) << loader.status();
    if (!loader.ok()) return d;
    int64_t taken = 0;
    if ((*loader)->position().epoch == epoch) {
      for (Batch& b : (*loader)->Epoch(epoch)) {
        for (int64_t s = 0; s < b.size(); ++s) {
          const uint64_t index = b.indices()[s];
          d.samples.push_back(index);
          EXPECT_EQ(b.data<uint8_t>()[s * 6], testing::SampleByte(index, 0));
        }
        if (++taken == batches) break;
      }
    }
    const Position at = (*loader)->position();
    if (r == 0) {
      d.position = at;
      text = PositionToText(at);
    }
    EXPECT_EQ(PositionToText(at), text) << "rank " << r << " of " << world;
  }
  return d;
}

TEST(ElasticLoaderTest, FourRanksStopAndThreeContinueWithEachSampleOnce) {
  testing::TempDir dir;
  constexpr uint64_t kSamples = 1000;
  testing::WriteIdxSplit(dir, kSamples, 2, 3);
  auto opened = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(opened.ok()) << opened.status();
  const std::shared_ptr<const Dataset> dataset = std::move(*opened);
  for (Order order :
       {Order::kSequential, Order::kFullShuffle, Order::kBlock, Order::kQuasiRandom}) {
    for (int64_t batch_after : {int64_t{10}, int64_t{20}}) {
      SCOPED_TRACE(std::string(OrderName(order)) + ", batch size 10 then " +
                   std::to_string(batch_after));
      LoaderOptions o;
      o.order = order;
      o.seed = 11;
      o.batch_size = 10;
      o.block_samples = 16;
      o.window_bytes = 96;  // 16 samples of 6 bytes a window
      o.group_windows = 3;
      o.read_threads = 2;
      o.decode_threads = 1;
      o.start = {1, 0};
      const Delivery before = Deliver(dataset, o, 4, 1, 7);
      o.batch_size = batch_after;
      o.start = before.position;
      const Delivery after = Deliver(dataset, o, 3, 1, -1);
      std::map<uint64_t, int> count;
      for (uint64_t s : before.samples) ++count[s];
      for (uint64_t s : after.samples) ++count[s];
      EXPECT_EQ(before.samples.size(), 4u * 7 * 10);
      // 720 left over 3 ranks: 240 each, no padding.
      EXPECT_EQ(after.samples.size(), kSamples - 280);
      EXPECT_EQ(count.size(), kSamples);
      for (const auto& [sample, n] : count) ASSERT_EQ(n, 1) << "sample " << sample;
      // The epoch after runs as any epoch of 3 ranks.
      o.start = {2, 0};
      const Delivery next = Deliver(dataset, o, 3, 2, -1);
      EXPECT_EQ(next.samples.size(), 1002u);  // 334 a rank: 2 of padding
    }
  }
}

TEST(ElasticLoaderTest, APositionFromAnotherSeedOrDatasetIsAnErrorNamingIt) {
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 100, 2, 3);
  auto opened = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(opened.ok()) << opened.status();
  const std::shared_ptr<const Dataset> dataset = std::move(*opened);
  LoaderOptions o;
  o.order = Order::kFullShuffle;
  o.seed = 1;
  o.batch_size = 10;
  auto loader = Loader::Open(dataset, o);
  ASSERT_TRUE(loader.ok()) << loader.status();
  Position saved = (*loader)->position();
  o.seed = 2;
  o.world_size = 2;
  o.start = saved;
  auto other = Loader::Open(dataset, o);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("LoaderOptions.start.split.seed: the position's is 1, "
                                          "this loader's 2"),
            std::string::npos)
      << other.status();
  // Absurd sizes, as a position read from a damaged file may hold, are named.
  Position absurd = saved;
  absurd.split.world_size = 1 << 30;
  EXPECT_NE((*loader)->Seek(absurd).message().find("split.world_size: 1073741824 is outside"),
            std::string::npos);
  absurd = saved;
  absurd.split.batch_size = int64_t{1} << 40;
  EXPECT_NE((*loader)->Seek(absurd).message().find("split.batch_size"), std::string::npos);
  saved.split.dataset_size = 99;
  const Status s = (*loader)->Seek(saved);
  EXPECT_NE(s.message().find("Loader::Seek: position.split.dataset_size: the position's is 99"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace stoke
