// The stoke command, run as a user runs it: exit codes, messages, JSON, digests.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "testing/test_data.h"
#include "tools/cli_run.h"

namespace stoke {
namespace {

std::string Digest(const std::string& output) {
  const size_t at = output.find("digest       ");
  return at == std::string::npos ? "" : output.substr(at + 13, 16);
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::WriteIdxSplit(dir_, 300, 5, 5); }
  testing::TempDir dir_;
};

TEST_F(CliTest, FashionMnistTrainSplitIs60000SamplesAnEpoch) {
  const std::string fmnist = "/usr/share/datasets/fashion-mnist";
  struct stat st;
  if (::stat(fmnist.c_str(), &st) != 0) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::string json = dir_.Join("f.json");
  CliRun r = Stoke("profile " + fmnist + " --format idx --batch 100 --quiet --json " + json);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto bytes = testing::ReadFileBytes(json);
  std::string text(bytes.begin(), bytes.end());
  for (const char* key :
       {"\"samples\":60000", "\"batches\":600", "\"skipped\":0", "\"seconds\":",
        "\"samples_per_second\":", "\"bytes_per_second\":", "\"peak_rss_bytes\":", "\"digest\":",
        "\"stages\":", "\"busy_seconds\":", "\"blocked_seconds\":", "\"threads\":"}) {
    EXPECT_NE(text.find(key), std::string::npos) << key << " in " << text;
  }
}

TEST_F(CliTest, DigestDependsOnTheSeedOnly) {
  const std::string base = "profile " + dir_.path() + " --batch 16 --shuffle full --digest --quiet";
  CliRun a = Stoke(base + " --seed 1 --read-threads 1 --io pread");
  CliRun b = Stoke(base + " --seed 1 --read-threads 6 --ring-slots 2 --io uring");
  CliRun c = Stoke(base + " --seed 2");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  ASSERT_EQ(Digest(a.output).size(), 16u) << a.output;
  EXPECT_EQ(Digest(a.output), Digest(b.output));
  EXPECT_NE(Digest(a.output), Digest(c.output));
}

TEST_F(CliTest, UsageErrorsExitTwoNamingTheOption) {
  struct Case {
    std::string args;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {"profile " + dir_.path() + " --batch 0", "--batch"},
           {"profile " + dir_.path() + " --shuffle sideways", "--shuffle"},
           {"profile " + dir_.path() + " --bogus 1", "--bogus"},
           {"profile " + dir_.path() + " --rank 2 --world 2", "--rank"},
           {"profile " + dir_.path() + " --memory-budget 1K", "--memory-budget"},
           {"profile", "PATH"},
           {"frobnicate", "frobnicate"},
           // Both say what the step needs; one was silently ignored.
           {"bench " + dir_.path() + " --need 100 --step sleep:5ms", "--need and --step"},
       }) {
    CliRun r = Stoke(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST_F(CliTest, ANewcomersSmallMistakesAreExplained) {
  // --io mmap on a gzipped IDX: it is decompressed into memory at open, so
  // there is nothing to map; the message said only IDX and CIFAR can be mapped.
  testing::TempDir gz;
  testing::WriteIdx(gz.Join("train-images-idx3-ubyte.gz"), gz.Join("train-labels-idx1-ubyte.gz"),
                    20, 4, 5, /*gzip=*/true);
  CliRun mmap = Stoke("profile " + gz.path() + " --io mmap --quiet");
  EXPECT_NE(mmap.exit_code, 0) << mmap.output;
  EXPECT_NE(mmap.output.find("already in memory (a gzipped file is decompressed at open)"),
            std::string::npos)
      << mmap.output;
  EXPECT_NE(mmap.output.find("leave io at auto"), std::string::npos) << mmap.output;

  // --pin-memory without a GPU says so as every other path does (it named
  // cudaErrorInsufficientDriver alone).
  CliRun pinned = Stoke("profile " + dir_.path() + " --pin-memory --quiet");
  // (A build without CUDA says that instead.)
  if (pinned.exit_code != 0 && pinned.output.find("built without it") == std::string::npos) {
    EXPECT_NE(pinned.output.find("no CUDA device is visible"), std::string::npos) << pinned.output;
  }

  // Two batches: too short to judge, and no steady rate or capacities that
  // pretend otherwise (it printed "steady 629705 samples/s" and a read capacity).
  CliRun two = Stoke("profile " + dir_.path() + " --max-batches 2 --no-ceilings");
  // (Under a sanitizer two batches may last the 0.1 s a verdict needs: then
  // the run is judged, and its figures are printed.)
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const bool too_short = two.output.find("too short to judge") != std::string::npos;
  EXPECT_EQ(too_short, two.output.find("steady       not measured") != std::string::npos)
      << two.output;
  EXPECT_EQ(too_short, two.output.find("capacity     not judged") != std::string::npos)
      << two.output;
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  EXPECT_TRUE(too_short) << two.output;
#endif
}

TEST_F(CliTest, DataErrorsExitOneNamingTheFile) {
  CliRun missing = Stoke("profile " + dir_.Join("nope") + " --quiet");
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("nope"), std::string::npos);

  const std::string list = testing::WriteNpyList(dir_, 20, 2, 2);
  testing::WriteFile(dir_.Join("s5.npy"), {'g', 'a', 'r', 'b', 'a', 'g', 'e'});
  CliRun bad = Stoke("profile " + list + " --format list --batch 4 --quiet");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("s5.npy: not a .npy file"), std::string::npos) << bad.output;

  CliRun skipped =
      Stoke("profile " + list + " --format list --batch 4 --on-error skip --quiet --json " +
            dir_.Join("s.json"));
  EXPECT_EQ(skipped.exit_code, 0) << skipped.output;
  EXPECT_EQ(ReadJson(dir_.Join("s.json")).value("skipped", -1), 1) << ReadText(dir_.Join("s.json"));
}

TEST_F(CliTest, TrainPrintsEpochsAndWritesJson) {
  // 300 samples of 5x5: labels i % 10, which an MLP can fit only partly; the
  // run checks the plumbing, not the accuracy.
  const std::string json = dir_.Join("train.json");
  CliRun run = Stoke("train " + dir_.path() + " --model mlp:25-16-10 --epochs 2 --batch 16 " +
                     "--val-split 0.2 --json " + json);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("240 training, 60 validation samples"), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("epoch 2/2"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("val_accuracy"), std::string::npos) << run.output;
  const std::vector<uint8_t> bytes = testing::ReadFileBytes(json);
  const std::string text(bytes.begin(), bytes.end());
  for (const char* key :
       {"\"epochs\":[{\"epoch\":1,\"seconds\":", "\"val_accuracy\":", "\"test_accuracy\":null",
        "\"device\":\"cpu\"", "\"model\":\"mlp:25-16-10\""}) {
    EXPECT_NE(text.find(key), std::string::npos) << key << " in " << text;
  }
  CliRun bad_model = Stoke("train " + dir_.path() + " --model mlp:784-10");
  EXPECT_EQ(bad_model.exit_code, 2);
  EXPECT_NE(bad_model.output.find("--model 'mlp:784-10': the model takes 784 inputs but samples "
                                  "are 5x5 uint8"),
            std::string::npos)
      << bad_model.output;
  CliRun bad_lr = Stoke("train " + dir_.path() + " --model mlp:25-10 --lr -1");
  EXPECT_EQ(bad_lr.exit_code, 2);
  EXPECT_NE(bad_lr.output.find("--lr"), std::string::npos) << bad_lr.output;
  CliRun cuda = Stoke("train " + dir_.path() + " --model mlp:25-10 --device cuda");
  EXPECT_EQ(cuda.exit_code, 1);
  EXPECT_NE(cuda.output.find("cuda:0"), std::string::npos) << cuda.output;
}

// Three runs whose bottleneck is known by construction, each named in the JSON.
TEST(CliProfileVerdictTest, NamesTheBottleneckOfDecodeReadAndConsumerBoundRuns) {
  testing::TempDir dir;
  setenv("XDG_CACHE_HOME", dir.Join("cache").c_str(), 1);  // the ceilings cache, not the user's
  const std::string root = dir.Join("images");
  ASSERT_EQ(
      Stoke("synth " + root + " --count 96 --classes 3 --min-side 160 --max-side 240").exit_code,
      0);
  const std::string json = dir.Join("p.json");
  auto verdict = [&](const std::string& flags) {
    CliRun run = Stoke("profile " + root + " --quiet --size 64x64 --json " + json + " " + flags);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    const nlohmann::json j = ReadJson(json);
    return j.is_object() ? j.value("bottleneck", "(none) " + j.dump()) : ReadText(json);
  };
  // Margins wide enough for the sanitizer builds, where decoding is 5-10x slower:
  // a disk of 40 ms seeks (25 reads/s), and a step of 400 ms per 8 samples.
  // Forty epochs of 96 images: long enough to judge (a verdict needs 0.1 s).
  // Six were not on an idle machine: at 64x64 the decoder reads these images
  // at a DCT scale of 1/2 or 1/4, about 0.15 ms each, so 576 of them took
  // under 0.1 s once and the run was "too short".
  EXPECT_EQ(verdict("--decode-threads 1 --epochs 40 --no-ceilings"), "decode");
  // A run of one small batch is too short to judge (under 0.1 s: 2 ms in a
  // release build), and says how long to run. In a sanitizer build, or on a
  // loaded machine, the same batch may take longer than 0.1 s, and then it is
  // judged: either way the verdict must match the run's measured length. One
  // run gives the text and the JSON both are checked on.
  const CliRun short_run = Stoke("profile " + root + " --quiet --size 64x64 --json " + json +
                                 " --batch 4 --max-batches 1 --no-ceilings");
  ASSERT_EQ(short_run.exit_code, 0) << short_run.output;
  const nlohmann::json short_json = ReadJson(json);
  const std::string short_text = ReadText(json);
  const double short_seconds = short_json.value("seconds", -1.0);
  ASSERT_GE(short_seconds, 0) << short_text;  // -1: no "seconds"
  const bool too_short = short_json.value("bottleneck", "") == "too short";
  EXPECT_EQ(too_short, short_seconds < 0.1) << short_text;
  if (short_seconds < 0.1) {
    EXPECT_NE(short_run.output.find("the run was too short to judge (batches delivered: 1, in"),
              std::string::npos)
        << short_run.output;
    EXPECT_TRUE(short_run.output.find("--epochs") != std::string::npos ||
                short_run.output.find("--max-batches") != std::string::npos)
        << short_run.output;
    EXPECT_EQ(short_run.output.find("advice 1"), std::string::npos) << short_run.output;
  }
  EXPECT_EQ(verdict("--storage-model 20,0.1,40 --shuffle full --batch 8 --max-batches 2 "
                    "--no-ceilings"),
            "read");
  EXPECT_EQ(verdict("--step sleep:400ms --batch 8 --max-batches 2 --no-ceilings"), "consumer");
  // With ceilings: the JSON carries them and the advice.
  CliRun run = Stoke("profile " + root +
                     " --quiet --size 64x64 --storage-model hdd --max-batches 1 "
                     "--json " +
                     json);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::vector<uint8_t> bytes = testing::ReadFileBytes(json);
  const std::string text(bytes.begin(), bytes.end());
  for (const char* key : {"\"starved_fraction\":", "\"ceilings\":{", "\"advice\":[{\"what\":",
                          "\"storage_random_reads_per_second\":", "\"capacities\":["}) {
    EXPECT_NE(text.find(key), std::string::npos) << key << " in " << text;
  }
  EXPECT_NE(run.output.find("advice 1"), std::string::npos) << run.output;
  // The ceilings are cached for the next run on this dataset, unless --remeasure.
  CliRun again =
      Stoke("profile " + root + " --quiet --size 64x64 --storage-model hdd " + "--max-batches 1");
  EXPECT_NE(again.output.find("(cached; --remeasure"), std::string::npos) << again.output;
  again = Stoke("profile " + root + " --quiet --size 64x64 --storage-model hdd --max-batches 1 " +
                "--remeasure");
  EXPECT_EQ(again.output.find("(cached;"), std::string::npos) << again.output;
  // A Chrome trace with spans of every stage, and an HTML report with its plots.
  const std::string trace = dir.Join("t.json"), report = dir.Join("r.html");
  run = Stoke("profile " + root + " --quiet --size 64x64 --no-ceilings --step sleep:1ms --trace " +
              trace + " --report " + report);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::vector<uint8_t> t = testing::ReadFileBytes(trace);
  const std::string trace_text(t.begin(), t.end());
  EXPECT_TRUE(trace_text.starts_with("{\"displayTimeUnit\":\"ms\""));
  EXPECT_EQ(std::count(trace_text.begin(), trace_text.end(), '{'),
            std::count(trace_text.begin(), trace_text.end(), '}'));
  for (const char* span : {"\"name\":\"read\"", "\"name\":\"decode\"", "\"name\":\"step\"",
                           "\"name\":\"batches ready\"", "\"ph\":\"X\"", "\"ph\":\"C\""}) {
    EXPECT_NE(trace_text.find(span), std::string::npos) << span;
  }
  const std::vector<uint8_t> r = testing::ReadFileBytes(report);
  const std::string html(r.begin(), r.end());
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("Throughput per stage"), std::string::npos);
  EXPECT_NE(html.find("<polyline"), std::string::npos);
  EXPECT_NE(html.find("Bottleneck: "), std::string::npos);
  CliRun bad = Stoke("profile " + root + " --step sleep:5parsecs");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--step"), std::string::npos) << bad.output;
  bad = Stoke("profile " + root + " --storage-model floppy");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--storage-model"), std::string::npos) << bad.output;
}

TEST(CliPackTest, PackedShardsGiveTheFoldersDigest) {
  testing::TempDir dir;
  const std::string root = dir.Join("images"), shards = dir.Join("shards");
  ASSERT_EQ(
      Stoke("synth " + root + " --count 30 --classes 3 --min-side 48 --max-side 96").exit_code, 0);
  // --keep-order: record i is image i, so the seeded crops are the same.
  CliRun pack = Stoke("pack " + root + " " + shards + " --shard-size 64K --keep-order");
  ASSERT_EQ(pack.exit_code, 0) << pack.output;
  EXPECT_NE(pack.output.find("30 records"), std::string::npos) << pack.output;
  EXPECT_NE(pack.output.find("30 JPEGs rewritten with restart markers"), std::string::npos)
      << pack.output;
  CliRun kept = Stoke("pack " + root + " " + dir.Join("kept") + " --keep-jpeg --keep-order");
  ASSERT_EQ(kept.exit_code, 0) << kept.output;
  EXPECT_EQ(kept.output.find("rewritten"), std::string::npos) << kept.output;
  const std::string args =
      " --quiet --no-ceilings --digest --size 32x32 --crop random --flip "
      "--shuffle full --seed 9 --batch 7";
  CliRun a = Stoke("profile " + root + args);
  CliRun b = Stoke("profile " + shards + args);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("shards " + shards), std::string::npos) << b.output;
  EXPECT_FALSE(Digest(a.output).empty());
  EXPECT_EQ(Digest(a.output), Digest(b.output));
  CliRun c = Stoke("profile " + dir.Join("kept") + args);
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_EQ(Digest(a.output), Digest(c.output));
  CliRun bad = Stoke("pack " + root + " " + shards + " --shard-size 10");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--shard-size"), std::string::npos) << bad.output;
}

TEST(CliBenchTest, ComparesLocationsModelsAndLayoutsCold) {
  testing::TempDir dir;
  const std::string root = dir.Join("images");
  ASSERT_EQ(
      Stoke("synth " + root + " --count 24 --classes 2 --min-side 48 --max-side 64").exit_code, 0);
  const std::string json = dir.Join("bench.json");
  CliRun run = Stoke("bench --data local=" + root + " --model 100,0.1,2 --pack --samples 16 " +
                     "--min-seconds 0.2 --batch 8 --size 32x32 --need 10 --json " + json +
                     " --report " + dir.Join("bench.html"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("posix_fadvise"), std::string::npos) << run.output;
  const std::string text = ReadText(json);
  const nlohmann::json bench = ReadJson(json);
  ASSERT_TRUE(bench.is_object()) << text;
  // Two devices (real, the model) x two layouts: two raw passes each; the
  // pipeline in full shuffle with the backend auto chose (and pread where that
  // was another), and on shards in quasi order too.
  const std::vector<const nlohmann::json*> rows = ObjectsWith(bench, "pass");
  EXPECT_EQ(rows.size(), 4 * 2 + 2 + 3 + 2 + 2u) << text;
  bool quasi = false;
  for (const nlohmann::json* row : rows) {
    const std::string pass = row->at("pass").get<std::string>();
    if (pass.rfind("pipeline, quasi, pread windows", 0) == 0) quasi = true;
    if (pass.rfind("pipeline", 0) == 0) {
      EXPECT_TRUE(row->contains("batch_label_mix")) << row->dump();
    }
  }
  EXPECT_TRUE(quasi) << text;
  // The summary ends with what to do, per location.
  EXPECT_NE(run.output.find("=> local real: read the data"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("=> local model 100,0.1,2: read the data packed into shards"),
            std::string::npos)
      << run.output;
  for (const char* key :
       {"\"layout\":\"shards\"", "\"device\":\"model 100,0.1,2\"",
        "\"pass\":\"raw reads, 8 in flight\"", "\"p99_ms\":", "\"verdict\":\"meets the need\""}) {
    EXPECT_NE(text.find(key), std::string::npos) << key << " in " << text;
  }
  EXPECT_TRUE(std::filesystem::exists(root + ".stoke-shards/shard-000000.stk"));
  CliRun bad = Stoke("bench --data " + root);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("LABEL=PATH"), std::string::npos) << bad.output;
}

TEST(CliBenchTest, PackShortSideAddsTheResizedShardsBesideTheFullSizeOnes) {
  testing::TempDir dir;
  const std::string root = dir.Join("images");
  ASSERT_EQ(
      Stoke("synth " + root + " --count 24 --classes 2 --min-side 96 --max-side 128").exit_code, 0);
  const std::string json = dir.Join("bench.json");
  CliRun run = Stoke("bench " + root + " --pack-short-side 48 --samples 8 --min-seconds 0.2 " +
                     "--batch 8 --size 32x32 --json " + json);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json bench = ReadJson(json);
  int full = 0, resized = 0;
  for (const nlohmann::json* row : ObjectsWith(bench, "layout")) {
    const std::string layout = row->at("layout").get<std::string>();
    full += layout == "shards";
    resized += layout == "shards-48";
  }
  EXPECT_GT(full, 0) << run.output;  // --pack-short-side implies --pack
  EXPECT_EQ(resized, full) << run.output;
  // The resized copy is recorded as such, and its images are 48 on the short side.
  CliRun described = Stoke("profile " + root + ".stoke-shards-s48 --max-batches 1 --no-ceilings");
  ASSERT_EQ(described.exit_code, 0) << described.output;
  EXPECT_NE(described.output.find("larger than a short side of 48 resampled to it"),
            std::string::npos)
      << described.output;
  CliRun bad = Stoke("pack " + root + " " + dir.Join("x") + " --quality 80");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--quality: applies to resampled images"), std::string::npos)
      << bad.output;
}

TEST(CliProfileTest, JpegCeilingsIncludeTheEntropyFloorAndTheResizedDecode) {
  // Images larger than a 64x64 output needs (short sides of 120 to 160, the
  // resize side 74): the ceilings give the entropy floor, as stored and as
  // packed, above the decode rate (it is a part of the decode's work), and the
  // decode rate at the resize side; the verdict says how close decode is.
  testing::TempDir dir;
  const std::string root = dir.Join("images");
  ASSERT_EQ(
      Stoke("synth " + root + " --count 48 --classes 2 --min-side 120 --max-side 160").exit_code,
      0);
  setenv("XDG_CACHE_HOME", dir.Join("cache").c_str(), 1);
  const std::string json = dir.Join("p.json");
  CliRun run =
      Stoke("profile " + root + " --size 64x64 --crop random --batch 16 --quiet --json " + json);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json profile = ReadJson(json);
  ASSERT_TRUE(profile.contains("ceilings")) << profile.dump();
  const nlohmann::json& c = profile["ceilings"];
  const double decode = c.value("decode_samples_per_second_per_core", 0.0);
  EXPECT_GT(decode, 0) << c.dump();
  EXPECT_GT(c.value("entropy_floor_samples_per_second_per_core", 0.0), decode) << c.dump();
  EXPECT_GT(c.value("codec_samples_per_second_per_core", 0.0), 0) << c.dump();
  EXPECT_GT(c.value("entropy_floor_samples_per_second_per_core_packed", 0.0),
            c.value("decode_samples_per_second_per_core_packed", 0.0))
      << c.dump();
  EXPECT_EQ(c.value("resize_short_side", 0), 74) << c.dump();
  EXPECT_GT(c.value("decode_samples_per_second_per_core_resized", 0.0), 0) << c.dump();
  if (profile.value("bottleneck", "") == "decode") {
    EXPECT_NE(profile.value("explanation", "").find("of the entropy floor"), std::string::npos)
        << profile.value("explanation", "");
    EXPECT_NE(profile.value("explanation", "").find("go to Huffman decoding"), std::string::npos)
        << profile.value("explanation", "");
  }
  // IDX holds no JPEGs: no floor.
  testing::WriteIdxSplit(dir, 64, 4, 4);
  ASSERT_EQ(Stoke("profile " + dir.path() + " --quiet --json " + json).exit_code, 0);
  EXPECT_EQ(ReadJson(json)["ceilings"].value("entropy_floor_samples_per_second_per_core", -1.0), 0);
  EXPECT_EQ(ReadJson(json)["ceilings"].value("codec_samples_per_second_per_core", -1.0), 0);
}

// A number after "key": in JSON text; -1 when absent.
TEST(CliMemoryTest, HelpAndACpuProfileOfJpegsPayForNoGpuLibrary) {
  // cuDNN and cuBLAS load only when a GPU trainer opens: `stoke help` stays
  // small, and a CPU profile of JPEGs holds its ring and read buffers plus at
  // most 64 MiB.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers' shadow memory is resident too";
#endif
  CliRun help = Stoke("help");
  ASSERT_EQ(help.exit_code, 0) << help.output;
  rusage usage{};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &usage), 0);
  EXPECT_LT(usage.ru_maxrss, 30 * 1024) << "KB resident at the peak of stoke help";
  testing::TempDir dir;
  const std::string root = dir.Join("images");
  ASSERT_EQ(Stoke("synth " + root + " --count 64 --classes 4").exit_code, 0);
  const std::string json = dir.Join("p.json");
  setenv("XDG_CACHE_HOME", dir.Join("cache").c_str(), 1);
  CliRun run =
      Stoke("profile " + root + " --crop random --batch 32 --quiet --no-ceilings --json " + json);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json profile = ReadJson(json);
  const double peak = profile.value("peak_rss_bytes", -1.0);
  const double held = profile.value("ring_bytes", -1.0) + profile.value("arena_bytes", -1.0);
  EXPECT_GT(peak, held);
  EXPECT_LT(peak, held + 64.0 * 1048576) << run.output;
}

TEST(CliImageTest, SynthThenProfileAnImageFolder) {
  testing::TempDir dir;
  const std::string root = dir.Join("images");
  CliRun synth = Stoke("synth " + root + " --count 40 --classes 4 --min-side 64 --max-side 96");
  ASSERT_EQ(synth.exit_code, 0) << synth.output;
  EXPECT_NE(synth.output.find("40 JPEGs in 4 classes"), std::string::npos) << synth.output;
  const std::string args = "profile " + root +
                           " --size 32x48 --crop random --flip --layout chw --batch 8 --quiet "
                           "--digest --shuffle full --seed 2";
  CliRun a = Stoke(args + " --decode-threads 2");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find("40 images in 4 classes"), std::string::npos) << a.output;
  EXPECT_NE(a.output.find("3x32x48 uint8"), std::string::npos) << a.output;
  EXPECT_NE(a.output.find("delivered    40 samples in 5 batches"), std::string::npos) << a.output;
  // The last lines say what the run showed and what to try next.
  const size_t in_short = a.output.rfind("\nin short     ");
  const size_t next = a.output.rfind("\nnext         ");
  ASSERT_NE(in_short, std::string::npos) << a.output;
  ASSERT_NE(next, std::string::npos) << a.output;
  EXPECT_LT(in_short, next);
  EXPECT_EQ(a.output.find('\n', next + 1), a.output.size() - 1) << "next is the last line";
  CliRun b = Stoke(args + " --read-threads 1");
  EXPECT_EQ(Digest(a.output), Digest(b.output));
  EXPECT_FALSE(Digest(a.output).empty());
  // Usage errors name the option.
  CliRun bad_size = Stoke("profile " + root + " --size 32");
  EXPECT_EQ(bad_size.exit_code, 2);
  EXPECT_NE(bad_size.output.find("--size"), std::string::npos) << bad_size.output;
  CliRun bad_count = Stoke("synth " + root + " --count 0");
  EXPECT_EQ(bad_count.exit_code, 2);
  EXPECT_NE(bad_count.output.find("--count"), std::string::npos) << bad_count.output;
}

// The val_accuracy of each epoch printed.
std::vector<double> ValAccuracies(const std::string& output) {
  std::vector<double> out;
  for (size_t at = output.find("val_accuracy "); at != std::string::npos;
       at = output.find("val_accuracy ", at + 1)) {
    out.push_back(std::stod(output.substr(at + 13, 6)));
  }
  return out;
}

TEST(CliTrainTest, AValidationSplitOfAClassSortedFolderValidatesEveryClass) {
  // An ImageFolder lists its classes in order. Keras's last quarter is all
  // of the last class, which training never sees: 0 every epoch. The
  // stratified split validates every class, and a CNN trained on the
  // folder's HWC uint8 batches does better than chance (0.25) on it.
  testing::TempDir dir;
  const std::string root = dir.Join("images");
  CliRun synth = Stoke("synth " + root + " --count 400 --classes 4 --min-side 48 --max-side 64");
  ASSERT_EQ(synth.exit_code, 0) << synth.output;
  const std::string args = "train " + root +
                           " --model cnn:8-16-32-4 --size 16x16 --epochs 5 --batch 16 "
                           "--optimizer adam --lr 0.003 --val-split 0.25";
  CliRun stratified = Stoke(args);
  ASSERT_EQ(stratified.exit_code, 0) << stratified.output;
  EXPECT_NE(stratified.output.find("300 training, 100 validation samples (stratified"),
            std::string::npos)
      << stratified.output;
  const std::vector<double> good = ValAccuracies(stratified.output);
  ASSERT_EQ(good.size(), 5u) << stratified.output;
  EXPECT_GT(*std::max_element(good.begin(), good.end()), 0.4) << stratified.output;
  EXPECT_NE(*std::max_element(good.begin(), good.end()),
            *std::min_element(good.begin(), good.end()))
      << "it moves with training: " << stratified.output;

  CliRun last = Stoke(args + " --val-select last");
  ASSERT_EQ(last.exit_code, 0) << last.output;
  EXPECT_EQ(ValAccuracies(last.output), std::vector<double>(5, 0.0)) << last.output;

  CliRun bad = Stoke(args + " --val-split 0.001");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--val-split 0.001000: StratifiedSplit: a validation fraction of "
                            "0.001000 leaves no validation samples"),
            std::string::npos)
      << bad.output;
}

}  // namespace
}  // namespace stoke
