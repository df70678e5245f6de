// examples/libtorch_train.cc under mpirun: two ranks read disjoint samples of
// every epoch in equal batch counts, end with identical parameters, and with
// the parameters one process reaches training on the union of their batches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "testing/test_data.h"
#include "tools/cli_run.h"

namespace stoke {
namespace {

// A --report file: batch count, per-epoch indices, parameters.
struct Report {
  int64_t batches = -1;
  std::vector<std::vector<uint64_t>> epochs;
  std::vector<double> parameters;
  std::string parameters_text;
};

[[maybe_unused]] Report ReadReport(const std::string& path) {
  Report r;
  std::istringstream in(ReadText(path));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key == "batches") {
      words >> r.batches;
    } else if (key == "epoch") {
      size_t epoch = 0;
      words >> epoch;
      r.epochs.resize(epoch + 1);
      for (uint64_t i; words >> i;) r.epochs[epoch].push_back(i);
    } else if (key == "parameters") {
      r.parameters_text = line;
      for (double p; words >> p;) r.parameters.push_back(p);
    }
  }
  return r;
}

#if defined(STOKE_MPIEXEC)
// The example on `ranks` ranks under mpirun (as root too, oversubscribing the
// cores). Open MPI's components leak at MPI_Finalize (LeakSanitizer lists them
// from unloaded modules it cannot name): leak checks are off for the ranks in
// an ASan build, on for single-process runs.
CliRun MpiRun(int ranks, const std::string& args) {
  return RunShell(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
      "ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\" timeout 300 " STOKE_MPIEXEC " -np " +
      std::to_string(ranks) + " --oversubscribe " LIBTORCH_TRAIN " " + args + " --mpi");
}
#endif

TEST(MpiTest, TwoRanksReadDisjointShardsAndEndWithTheParametersOfTheirUnion) {
#if !defined(STOKE_MPIEXEC)
  GTEST_SKIP() << "no MPI found at configure time (libopenmpi-dev, openmpi-bin), or the "
                  "examples are not built here (STOKE_BUILD_EXAMPLES)";
#else
  testing::TempDir dir;
  const std::string root = dir.Join("images");
  ASSERT_EQ(
      Stoke("synth " + root + " --count 101 --classes 4 --min-side 40 --max-side 90").exit_code, 0);
  // 101 samples over 2 ranks: 51 each (one padded by wrapping, as
  // DistributedSampler does), in 7 batches of 8 (the last of 3); 2 epochs.
  const std::string args = " " + root + " --size 32 --batch 8 --epochs 2 --lr 0.1";
  const CliRun ranks = MpiRun(2, args + " --report " + dir.Join("rank"));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.output;
  const CliRun one = RunShell("timeout 300 " LIBTORCH_TRAIN + args +
                              " --union-of-ranks 2 --report " + dir.Join("union"));
  ASSERT_EQ(one.exit_code, 0) << one.output;

  const Report r0 = ReadReport(dir.Join("rank.0"));
  const Report r1 = ReadReport(dir.Join("rank.1"));
  const Report u = ReadReport(dir.Join("union"));
  EXPECT_EQ(r0.batches, 14);
  EXPECT_EQ(r1.batches, r0.batches);
  EXPECT_EQ(u.batches, r0.batches);  // a step of the union is one step of each rank
  ASSERT_EQ(r0.epochs.size(), 2u);
  ASSERT_EQ(r1.epochs.size(), 2u);
  ASSERT_EQ(u.epochs.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(r0.epochs[e].size(), 51u);
    EXPECT_EQ(r1.epochs[e].size(), 51u);
    // Disjoint but for the padding: 102 places hold all 101 samples.
    std::set<uint64_t> all(r0.epochs[e].begin(), r0.epochs[e].end());
    all.insert(r1.epochs[e].begin(), r1.epochs[e].end());
    EXPECT_EQ(all.size(), 101u) << "epoch " << e;
    const std::set<uint64_t> first(r0.epochs[e].begin(), r0.epochs[e].end());
    size_t shared = 0;
    for (uint64_t i : r1.epochs[e]) shared += first.count(i);
    EXPECT_LE(shared, 1u) << "epoch " << e << ": the ranks overlap beyond the padding";
    // The union trained on both ranks' samples, batch by batch.
    std::multiset<uint64_t> ranks_read(r0.epochs[e].begin(), r0.epochs[e].end());
    ranks_read.insert(r1.epochs[e].begin(), r1.epochs[e].end());
    EXPECT_EQ(std::multiset<uint64_t>(u.epochs[e].begin(), u.epochs[e].end()), ranks_read);
  }
  EXPECT_NE(r0.epochs[0], r0.epochs[1]);  // a new order each epoch

  // Averaged gradients: every rank holds the same parameters, bit for bit.
  ASSERT_FALSE(r0.parameters.empty());
  EXPECT_EQ(r0.parameters_text, r1.parameters_text);
  // And they are what one process reaches on the union, to float tolerance.
  ASSERT_EQ(u.parameters.size(), r0.parameters.size());
  double worst = 0;
  for (size_t i = 0; i < u.parameters.size(); ++i) {
    worst = std::max(worst, std::abs(u.parameters[i] - r0.parameters[i]));
  }
  EXPECT_LT(worst, 1e-5) << "the largest difference from the union's parameters";
  // The tolerance means something: one rank alone (other batches) ends far off.
  const CliRun alone = RunShell("timeout 300 " LIBTORCH_TRAIN + args +
                                " --union-of-ranks 1 --report " + dir.Join("alone"));
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  const Report a = ReadReport(dir.Join("alone"));
  ASSERT_EQ(a.parameters.size(), r0.parameters.size());
  double apart = 0;
  for (size_t i = 0; i < a.parameters.size(); ++i) {
    apart = std::max(apart, std::abs(a.parameters[i] - r0.parameters[i]));
  }
  EXPECT_GT(apart, 1e-3);
#endif
}

TEST(MpiTest, AJobStoppedOnThreeRanksContinuesOnTwoOrFiveWithTheSameParameters) {
  // Elastic resume: 3 ranks (batches of 10) stop after 2 steps and save the
  // loader's position and the parameters; the epoch goes on from them on 3
  // ranks, on 2 (batches of 15) and on 5 (batches of 6). The global batches
  // are the same 30 samples in every case, so the parameters agree to float
  // tolerance, and each run delivers the epoch's other samples once.
#if !defined(STOKE_MPIEXEC)
  GTEST_SKIP() << "no MPI found at configure time (libopenmpi-dev, openmpi-bin), or the "
                  "examples are not built here (STOKE_BUILD_EXAMPLES)";
#else
  testing::TempDir dir;
  const std::string root = dir.Join("images");
  // 120 samples: 40 a rank on 3 ranks; after 2 steps, 60 left: 2 more global
  // batches of 30 on 3, 2 or 5 ranks, no padding anywhere.
  ASSERT_EQ(
      Stoke("synth " + root + " --count 120 --classes 4 --min-side 40 --max-side 90").exit_code, 0);
  auto mpirun = [&](int ranks, int batch, const std::string& more) {
    return MpiRun(ranks,
                  root + " --size 32 --epochs 1 --lr 0.1 --batch " + std::to_string(batch) + more);
  };
  const std::string checkpoint = dir.Join("checkpoint");
  const CliRun stopped =
      mpirun(3, 10, " --stop-after 2 --checkpoint " + checkpoint + " --report " + dir.Join("stop"));
  ASSERT_EQ(stopped.exit_code, 0) << stopped.output;
  std::multiset<uint64_t> before;
  for (int r = 0; r < 3; ++r) {
    const Report rep = ReadReport(dir.Join("stop." + std::to_string(r)));
    ASSERT_EQ(rep.epochs.size(), 1u);
    EXPECT_EQ(rep.epochs[0].size(), 20u);
    before.insert(rep.epochs[0].begin(), rep.epochs[0].end());
  }
  std::vector<double> reference;
  for (const auto& [ranks, batch] : {std::pair{3, 10}, std::pair{2, 15}, std::pair{5, 6}}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks, batches of " + std::to_string(batch));
    const std::string name = dir.Join("resumed" + std::to_string(ranks));
    const CliRun resumed = mpirun(ranks, batch, " --resume " + checkpoint + " --report " + name);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    std::multiset<uint64_t> all = before;
    std::string parameters;
    for (int r = 0; r < ranks; ++r) {
      const Report rep = ReadReport(name + "." + std::to_string(r));
      ASSERT_EQ(rep.epochs.size(), 1u);
      EXPECT_EQ(rep.epochs[0].size(), static_cast<size_t>(60 / ranks));
      all.insert(rep.epochs[0].begin(), rep.epochs[0].end());
      if (r == 0) parameters = rep.parameters_text;
      EXPECT_EQ(rep.parameters_text, parameters) << "rank " << r;
    }
    // Each sample of the epoch once, between the stopped run and this one.
    EXPECT_EQ(all.size(), 120u);
    EXPECT_EQ(std::set<uint64_t>(all.begin(), all.end()).size(), 120u);
    const Report rank0 = ReadReport(name + ".0");
    if (reference.empty()) {
      reference = rank0.parameters;
      continue;
    }
    ASSERT_EQ(rank0.parameters.size(), reference.size());
    double worst = 0;
    for (size_t i = 0; i < reference.size(); ++i) {
      worst = std::max(worst, std::abs(rank0.parameters[i] - reference[i]));
    }
    EXPECT_LT(worst, 1e-5) << "the largest difference from the run resumed on 3 ranks";
  }
#endif
}

}  // namespace
}  // namespace stoke

namespace stoke {
namespace {

TEST(LibtorchTrainTest, TheTorchDataBaselineRefusesWhatItCannotRead) {
  // Packed shards given to the torch::data baseline (which reads class folders
  // of JPEGs) printed "0 images" and exited 0.
#if !defined(STOKE_MPIEXEC)
  GTEST_SKIP() << "the examples are not built here (STOKE_BUILD_EXAMPLES)";
#else
  testing::TempDir dir;
  const std::string root = dir.Join("images");
  ASSERT_EQ(Stoke("synth " + root + " --count 8 --classes 2 --min-side 40 --max-side 60").exit_code,
            0);
  ASSERT_EQ(Stoke("pack " + root + " " + dir.Join("shards")).exit_code, 0);
  const CliRun run =
      RunShell("timeout 300 " LIBTORCH_TRAIN " " + dir.Join("shards") + " --loader torchdata");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(
      run.output.find("--loader torchdata: " + dir.Join("shards") + " holds no class folders"),
      std::string::npos)
      << run.output;
#endif
}

}  // namespace
}  // namespace stoke
