// Remote data against real servers on loopback: shards from nginx (HTTP range
// reads) and s3rver (S3's API), directly and through a fault-injecting proxy,
// give the batches the same shards give from local disk, byte for byte; SigV4
// signs as AWS documents; faults are retried and counted; a stopped server
// ends a run with an error naming the URL, never a hang; open errors name the
// URL and what to check.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "decode/jpeg_encode.h"
#include "decode/synth_image.h"
#include "io/http_client.h"
#include "io/object_store.h"
#include "io/remote_file.h"
#include "stoke/loader.h"
#include "stoke/shards.h"
#include "testing/epoch_dump.h"
#include "testing/remote_servers.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

using internal::HttpClient;
using internal::HttpClientOptions;
using internal::HttpTransfer;
using testing::TempDir;

// ---- Pure parts: brace patterns, INI files, locations, backoff ----

TEST(ObjectStoreTest, BracesExpandAsWebDatasetDoes) {
  auto names = internal::ExpandBraces("s3://b/shard-{000008..000011}.{tar,stk}");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(*names,
            (std::vector<std::string>{"s3://b/shard-000008.tar", "s3://b/shard-000008.stk",
                                      "s3://b/shard-000009.tar", "s3://b/shard-000009.stk",
                                      "s3://b/shard-000010.tar", "s3://b/shard-000010.stk",
                                      "s3://b/shard-000011.tar", "s3://b/shard-000011.stk"}));
  EXPECT_EQ(*internal::ExpandBraces("http://h/a.tar"), std::vector<std::string>{"http://h/a.tar"});
  EXPECT_EQ(internal::ExpandBraces("x{3..1}").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(internal::ExpandBraces("x{1..2").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(internal::ExpandBraces("x{a..b}").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(internal::ExpandBraces("x{0..99999999}").status().code(), StatusCode::kInvalidArgument);
}

TEST(ObjectStoreTest, IniFilesAndLocationsParse) {
  auto ini = internal::ParseIni(
      "# comment\n[default]\naws_access_key_id = AKID\nAWS_Secret_Access_Key=SECRET\n\n"
      "[profile other]\nregion = eu-west-1\n",
      "credentials");
  ASSERT_TRUE(ini.ok()) << ini.status();
  EXPECT_EQ((*ini)["default"]["aws_access_key_id"], "AKID");
  EXPECT_EQ((*ini)["default"]["aws_secret_access_key"], "SECRET");
  EXPECT_EQ((*ini)["profile other"]["region"], "eu-west-1");
  const Status bad = internal::ParseIni("[default]\nno equals sign\n", "creds").status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("creds:2"), std::string::npos) << bad;

  auto s3 = internal::ParseRemote("s3://bucket/a b/c+d.stk");
  ASSERT_TRUE(s3.ok());
  EXPECT_EQ(s3->bucket, "bucket");
  EXPECT_EQ(s3->key, "a b/c+d.stk");
  internal::S3Settings settings;
  settings.endpoint = "http://127.0.0.1:9000";
  EXPECT_EQ(internal::ObjectUrl(settings, "bucket", s3->key),
            "http://127.0.0.1:9000/bucket/a%20b/c%2Bd.stk");
  settings.endpoint.clear();
  settings.signing.region = "eu-west-1";
  EXPECT_EQ(internal::ObjectUrl(settings, "bucket", "k"),
            "https://bucket.s3.eu-west-1.amazonaws.com/k");
  EXPECT_EQ(internal::ParseRemote("s3:///key").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(internal::ParseRemote("ftp://h/x").status().code(), StatusCode::kInvalidArgument);
}

TEST(ObjectStoreTest, BackoffStaysWithinItsCappedDoublingWindow) {
  HttpClientOptions o;
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int i = 0; i < 10000; ++i) {
    const int attempt = 1 + static_cast<int>(random() % 40);
    const int64_t d = std::min<int64_t>(o.backoff_cap.count(), o.backoff_base.count()
                                                                   << std::min(attempt - 1, 30));
    const int64_t got = internal::BackoffDelay(o, attempt, unit(random)).count();
    ASSERT_GE(got, d / 2) << "seed " << seed << " attempt " << attempt;
    ASSERT_LE(got, d) << "seed " << seed << " attempt " << attempt;
  }
}

TEST(ObjectStoreTest, S3ErrorCodeComesFromTheErrorBody) {
  EXPECT_EQ(internal::S3ErrorCode("<?xml version=\"1.0\"?><Error><Code>SlowDown</Code>"
                                  "<Message>Please reduce your request rate.</Message></Error>"),
            "SlowDown");
  EXPECT_EQ(internal::S3ErrorCode("not xml"), "");
}

// ---- SigV4: the AWS documentation's GET Object example ----

// Accepts one connection on loopback, keeps its request head, answers 200.
class OneRequestServer {
 public:
  OneRequestServer() {
    listener_ = testing::ListenOnLoopback(0, 1, &port_);
    thread_ = std::thread([this] {
      const int c = ::accept(listener_, nullptr, nullptr);
      char buffer[8192];
      while (head_.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(c, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        head_.append(buffer, static_cast<size_t>(n));
      }
      const char* ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
      ::send(c, ok, std::strlen(ok), MSG_NOSIGNAL);
      ::close(c);
    });
  }
  ~OneRequestServer() {
    thread_.join();
    ::close(listener_);
  }
  int port() const { return port_; }
  // After the request: its head.
  const std::string& head() {
    thread_.join();
    thread_ = std::thread([] {});
    return head_;
  }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::string head_;
  std::thread thread_;
};

TEST(Sigv4Test, SignsTheAwsDocumentedGetObjectExample) {
  // "Signature Calculations for the Authorization Header: Transferring Payload
  // in a Single Chunk", example GET Object: bucket examplebucket, key
  // test.txt, Range bytes=0-9, 20130524T000000Z, us-east-1; AWS gives the
  // signature below. The request goes to loopback with the documented Host.
  OneRequestServer server;
  HttpClient client(HttpClientOptions{});
  internal::HttpSigning signing;
  signing.sign = true;
  signing.region = "us-east-1";
  signing.access_key_id = "AKIAIOSFODNN7EXAMPLE";
  signing.secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  HttpTransfer t;
  t.url = "http://127.0.0.1:" + std::to_string(server.port()) + "/test.txt";
  t.signing = &signing;
  t.headers = {"Host: examplebucket.s3.amazonaws.com", "Range: bytes=0-9",
               "x-amz-date: 20130524T000000Z"};
  std::vector<std::byte> body;
  t.body = &body;
  ASSERT_TRUE(client.Fetch(&t).ok()) << t.status;
  const std::string& head = server.head();
  EXPECT_NE(head.find("Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request"),
            std::string::npos)
      << head;
  EXPECT_NE(head.find("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date"),
            std::string::npos)
      << head;
  EXPECT_NE(head.find("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"),
            std::string::npos)
      << head;
}

// ---- Against the servers ----

using Dump = testing::EpochDump;

// Epochs 0 to epochs - 1.
Dump Read(std::shared_ptr<Dataset> d, const LoaderOptions& o, int epochs) {
  return testing::DumpEpochs(std::move(d), o, 0, epochs);
}

class RemoteTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Few attempts, so that the failure tests end quickly; s3rver's
    // credentials (it checks the key and the SigV4 signature), not the
    // machine's own.
    ::setenv("AWS_MAX_ATTEMPTS", "4", 1);
    ::setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", "S3RVER", 1);
    ::setenv("AWS_REGION", "us-east-1", 1);
    ::unsetenv("AWS_PROFILE");
    ::unsetenv("AWS_ENDPOINT_URL_S3");
    dir_ = new TempDir;
    // Raw samples (IDX) in five shards, and JPEGs at odd sizes in two.
    testing::WriteIdxSplit(*dir_, 600, 8, 8);
    auto idx = OpenIdxSplit(dir_->path(), "train");
    ASSERT_TRUE(idx.ok()) << idx.status();
    PackOptions pack;
    pack.shard_bytes = 8192;
    ASSERT_TRUE(Pack(**idx, dir_->Join("www/idx"), pack).ok());
    const std::string images = dir_->Join("images");
    for (int i = 0; i < 60; ++i) {
      const int w = 61 + 7 * (i % 5), h = 47 + 5 * (i % 3);
      auto jpeg = internal::EncodeJpeg(internal::SynthPixels(w, h, i, i % 4, 4), w, h, {});
      ASSERT_TRUE(jpeg.ok());
      const std::string rel = "/c" + std::to_string(i % 4) + "/img_" + std::to_string(i) + ".jpg";
      std::filesystem::create_directories(std::filesystem::path(images + rel).parent_path());
      const auto* p = reinterpret_cast<const uint8_t*>(jpeg->data());
      testing::WriteFile(images + rel, std::vector<uint8_t>(p, p + jpeg->size()));
    }
    ImageFolderOptions folder;
    folder.root = images;
    auto jpegs = OpenImageFolder(folder);
    ASSERT_TRUE(jpegs.ok()) << jpegs.status();
    pack.shard_bytes = 64 << 10;
    ASSERT_TRUE(Pack(**jpegs, dir_->Join("www/jpeg"), pack).ok());
    nginx_ = new testing::Nginx;
    const Status started = nginx_->Start(dir_->Join("www"));
    ASSERT_TRUE(started.ok()) << started;
  }
  static void TearDownTestSuite() {
    delete nginx_;
    delete dir_;
  }

  static std::shared_ptr<Dataset> Shards(const std::string& path, bool jpeg) {
    ShardsOptions o;
    o.path = path;
    if (jpeg) {
      o.image.height = o.image.width = 24;
      o.image.crop = CropMode::kRandomResized;
      o.image.flip = true;
    }
    auto d = OpenShards(o);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : nullptr;
  }

  static LoaderOptions Options(Order order) {
    LoaderOptions o;
    o.batch_size = 32;
    o.order = order;
    o.seed = 7;
    o.window_bytes = 16 << 10;
    o.group_windows = 3;
    return o;
  }

  static TempDir* dir_;
  static testing::Nginx* nginx_;
};

TempDir* RemoteTest::dir_ = nullptr;
testing::Nginx* RemoteTest::nginx_ = nullptr;

TEST_F(RemoteTest, HttpShardsGiveTheBatchesOfLocalShardsInEveryOrder) {
  for (const bool jpeg : {false, true}) {
    const std::string name = jpeg ? "/jpeg" : "/idx";
    auto local = Shards(dir_->Join("www") + name, jpeg);
    auto remote = Shards(nginx_->url() + name, jpeg);
    ASSERT_TRUE(local && remote);
    EXPECT_EQ(remote->size(), local->size());
    for (const Order order : {Order::kSequential, Order::kFullShuffle, Order::kQuasiRandom}) {
      SCOPED_TRACE(std::string(name) + " " + std::string(OrderName(order)));
      const Dump a = Read(local, Options(order), 2);
      const Dump b = Read(remote, Options(order), 2);
      EXPECT_FALSE(a.indices.empty());
      EXPECT_TRUE(a == b);
      EXPECT_GT(b.stats.http_requests, 0u);
      EXPECT_EQ(b.stats.http_retries, 0u);
      EXPECT_EQ(a.stats.http_requests, 0u);
    }
  }
}

TEST_F(RemoteTest, WebDatasetTarsOverHttpGiveTheBatchesOfLocalTars) {
  // Two tars of the JPEGs as key.jpg + key.cls, made by GNU tar, named with
  // WebDataset's braces.
  const std::string web = dir_->Join("webtar");
  for (int t = 0; t < 2; ++t) {
    const std::string folder = web + "/part" + std::to_string(t);
    std::filesystem::create_directories(folder);
    for (int i = t * 30; i < t * 30 + 30; ++i) {
      const std::string key = folder + "/" + std::to_string(1000 + i);
      const std::string image =
          dir_->Join("images/c" + std::to_string(i % 4) + "/img_" + std::to_string(i) + ".jpg");
      std::filesystem::copy_file(image, key + ".jpg");
      const std::string label = std::to_string(i % 4) + "\n";
      testing::WriteFile(key + ".cls", std::vector<uint8_t>(label.begin(), label.end()));
    }
    const std::string command = "tar --sort=name -cf " + dir_->Join("www") + "/web-" +
                                std::to_string(t) + ".tar -C " + folder + " .";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  ImageOptions image;
  image.height = image.width = 24;
  image.crop = CropMode::kRandomResized;
  auto local = OpenTar({.path = dir_->Join("www") + "/web-{0..1}.tar", .image = image});
  auto remote = OpenTar({.path = nginx_->url() + "/web-{0..1}.tar", .image = image});
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_TRUE(remote.ok()) << remote.status();
  EXPECT_EQ((*remote)->size(), 60u);
  for (const Order order : {Order::kFullShuffle, Order::kQuasiRandom}) {
    EXPECT_TRUE(Read(*local, Options(order), 1) == Read(*remote, Options(order), 1));
  }
}

TEST_F(RemoteTest, ABracePatternNamesShardsWithoutAManifest) {
  auto local = Shards(dir_->Join("www/idx"), false);
  auto remote = Shards(nginx_->url() + "/idx/shard-{000000..000004}.stk", false);
  ASSERT_TRUE(local && remote);
  EXPECT_TRUE(Read(local, Options(Order::kFullShuffle), 1) ==
              Read(remote, Options(Order::kFullShuffle), 1));
}

TEST_F(RemoteTest, S3ShardsPackedToTheStoreGiveTheBatchesOfLocalShards) {
  testing::S3rver s3;
  const Status started = s3.Start(dir_->Join("s3"), "bucket");
  ASSERT_TRUE(started.ok()) << started;
  ::setenv("AWS_ENDPOINT_URL", s3.url().c_str(), 1);
  auto idx = OpenIdxSplit(dir_->path(), "train");
  ASSERT_TRUE(idx.ok());
  PackOptions pack;
  pack.shard_bytes = 8192;
  auto packed = Pack(**idx, "s3://bucket/train/idx", pack);
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_EQ(packed->shards, 5u);
  for (const Order order : {Order::kFullShuffle, Order::kQuasiRandom}) {
    EXPECT_TRUE(Read(Shards(dir_->Join("www/idx"), false), Options(order), 2) ==
                Read(Shards("s3://bucket/train/idx", false), Options(order), 2));
  }
  // An ImageFolder in the store (class prefixes, one GET per image) gives the
  // local folder's batches; packed from the store to the store, its shards do.
  const std::string images = dir_->Join("images");
  for (const auto& entry : std::filesystem::recursive_directory_iterator(images)) {
    if (!entry.is_regular_file()) continue;
    const std::vector<uint8_t> bytes = testing::ReadFileBytes(entry.path().string());
    const std::string key = entry.path().string().substr(images.size() + 1);
    ASSERT_TRUE(
        internal::PutRemote("s3://bucket/images/" + key,
                            {reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()})
            .ok());
  }
  ImageFolderOptions folder;
  folder.image.height = folder.image.width = 24;
  folder.image.crop = CropMode::kRandomResized;
  folder.root = images;
  auto local_images = OpenImageFolder(folder);
  folder.root = "s3://bucket/images";
  auto remote_images = OpenImageFolder(folder);
  ASSERT_TRUE(local_images.ok() && remote_images.ok()) << remote_images.status();
  EXPECT_EQ((*remote_images)->size(), 60u);
  EXPECT_TRUE(Read(*local_images, Options(Order::kFullShuffle), 1) ==
              Read(*remote_images, Options(Order::kFullShuffle), 1));
  ASSERT_TRUE(Pack(**remote_images, "s3://bucket/packed", pack).ok());
  EXPECT_TRUE(Read(Shards(dir_->Join("www/jpeg"), true), Options(Order::kFullShuffle), 1) ==
              Read(Shards("s3://bucket/packed", true), Options(Order::kFullShuffle), 1));
  // A file past kMultipartBytes goes up in parts, and comes back whole.
  {
    std::vector<uint8_t> big(internal::kMultipartBytes + 123457);
    std::mt19937_64 random(3);
    for (size_t i = 0; i < big.size(); i += 8) {
      const uint64_t v = random();
      std::memcpy(big.data() + i, &v, std::min<size_t>(8, big.size() - i));
    }
    testing::WriteFile(dir_->Join("big.bin"), big);
    ASSERT_TRUE(internal::UploadFile(dir_->Join("big.bin"), "s3://bucket/big.bin").ok());
    auto file = internal::RemoteFileSystem()->Open("s3://bucket/big.bin", {});
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ(*(*file)->Size(), big.size());
    std::vector<std::byte> back(big.size());
    auto n = (*file)->ReadAt(0, back);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, big.size());
    EXPECT_EQ(std::memcmp(back.data(), big.data(), big.size()), 0);
  }
  // A glob lists the bucket (paged: one key a page here).
  auto listed =
      internal::ListObjects(internal::SharedHttpClient(), *internal::S3Settings::FromEnvironment(),
                            "bucket", "train/idx/", 1);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 6u);  // five shards and the manifest
  auto globbed = Shards("s3://bucket/train/idx/shard-*.stk", false);
  ASSERT_TRUE(globbed);
  EXPECT_EQ(globbed->file_count(), 5u);
  // An unknown key is refused at open (403), naming the store's code and what
  // to check. (s3rver checks the key id, not a SigV4 signature: the
  // known-answer test above checks signing.)
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDUNKNOWN", 1);
  const Status forged = OpenShards({.path = "s3://bucket/train/idx"}).status();
  ::setenv("AWS_ACCESS_KEY_ID", "S3RVER", 1);
  EXPECT_EQ(forged.code(), StatusCode::kInvalidArgument) << forged;
  EXPECT_NE(forged.message().find("HTTP 403 InvalidAccessKeyId"), std::string::npos) << forged;
  EXPECT_NE(forged.message().find("credentials"), std::string::npos) << forged;
  // Shards without their manifest (a pack that never finished) are refused.
  ASSERT_TRUE(internal::DeleteRemote("s3://bucket/train/idx/stoke-manifest.txt").ok());
  ShardsOptions o;
  o.path = "s3://bucket/train/idx";
  const Status unfinished = OpenShards(o).status();
  EXPECT_EQ(unfinished.code(), StatusCode::kNotFound);
  EXPECT_NE(unfinished.message().find("stoke-manifest.txt"), std::string::npos) << unfinished;
  ::unsetenv("AWS_ENDPOINT_URL");
}

TEST_F(RemoteTest, ResetsAndSlowDownsAreRetriedCountedAndChangeNoByte) {
  testing::FaultProxy proxy(
      {.upstream_port = nginx_->port(), .reset_every = 10, .slowdown_every = 20});
  // The default 8 attempts: with a fault in about 1 request in 7, 4 attempts
  // (the suite's, for quick failure tests) all fail for 1 request in 2,000.
  internal::HttpClient* client = internal::SharedHttpClient();
  const int attempts = client->max_attempts();
  client->set_max_attempts(8);
  for (const Order order : {Order::kFullShuffle, Order::kQuasiRandom}) {
    SCOPED_TRACE(std::string(OrderName(order)));
    LoaderOptions o = Options(order);
    o.samples_per_task = 1;  // a request per sample: many faults
    const Dump a = Read(Shards(dir_->Join("www/jpeg"), true), o, 3);
    const Dump b = Read(Shards(proxy.url() + "/jpeg", true), o, 3);
    EXPECT_TRUE(a == b);
    EXPECT_GT(b.stats.http_retries, 0u);
  }
  EXPECT_GT(proxy.resets(), 0u);
  EXPECT_GT(proxy.slowdowns(), 0u);
  client->set_max_attempts(attempts);
}

TEST_F(RemoteTest, AStoppedServerEndsTheRunWithAnErrorNamingTheUrlNeverAHang) {
  for (const ErrorPolicy policy : {ErrorPolicy::kFail, ErrorPolicy::kSkip}) {
    testing::Nginx web;
    ASSERT_TRUE(web.Start(dir_->Join("www")).ok());
    LoaderOptions o = Options(Order::kFullShuffle);
    o.on_error = policy;
    o.max_refill_attempts = 2;  // each refill of a dead store costs its retries
    o.samples_per_task = 1;
    o.reads_in_flight = 8;
    auto loader = Loader::Open(Shards(web.url() + "/idx", false), o);
    ASSERT_TRUE(loader.ok()) << loader.status();
    ASSERT_TRUE((*loader)->Next().ok());
    web.Stop();
    const auto start = std::chrono::steady_clock::now();
    Status error;
    for (int i = 0; i < 200 && error.ok(); ++i) {
      auto batch = (*loader)->Next();
      if (!batch.ok()) error = batch.status();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: the run ended %.1f s after the server stopped: %s\n",
                policy == ErrorPolicy::kFail ? "fail" : "skip", seconds, error.ToString().c_str());
    ASSERT_FALSE(error.ok()) << "the run went on without its server";
    EXPECT_NE(error.message().find(web.url()), std::string::npos) << error;
    EXPECT_LT(seconds, 60);
    if (policy == ErrorPolicy::kSkip) {
      EXPECT_GT((*loader)->stats().skipped, 0u);
    }
  }
}

TEST_F(RemoteTest, OpenErrorsNameTheUrlAndWhatToCheck) {
  ShardsOptions o;
  o.path = nginx_->url() + "/missing";
  Status s = OpenShards(o).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find(o.path), std::string::npos) << s;
  EXPECT_NE(s.message().find("brace"), std::string::npos) << s;
  o.path = nginx_->url() + "/idx/shard-000099.stk";
  s = OpenShards(o).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("HTTP 404"), std::string::npos) << s;
  o.path = "http://127.0.0.1:" + std::to_string(testing::FreePort()) + "/idx";
  s = OpenShards(o).status();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find(o.path), std::string::npos) << s;
  EXPECT_NE(s.message().find("after 4 attempts"), std::string::npos) << s;
  o.path = "s3:///nobucket";
  EXPECT_EQ(OpenShards(o).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(RemoteTest, AStalledBodyTimesOutAndIsAskedAgain) {
  testing::FaultProxy proxy({.upstream_port = nginx_->port(), .stall_every = 1});
  HttpClientOptions options;
  options.stall_timeout = std::chrono::milliseconds(1000);
  options.max_attempts = 2;
  HttpClient client(options);
  const std::string path = dir_->Join("www/idx/shard-000000.stk");
  const std::vector<uint8_t> expected = testing::ReadFileBytes(path);
  std::vector<std::byte> got(expected.size());
  HttpTransfer t;
  t.url = proxy.url() + "/idx/shard-000000.stk";
  t.dst = got;
  const auto start = std::chrono::steady_clock::now();
  const Status s = client.Fetch(&t);
  // Every request stalls: both attempts time out, and the error says so.
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find("after 2 attempts"), std::string::npos) << s;
  EXPECT_EQ(t.retries, 1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(proxy.stalls(), 2u);
}

TEST_F(RemoteTest, AShortBodyResumesWhereItStopped) {
  // Every second request is reset after half its body: the retry asks only
  // for the rest, and the bytes are whole.
  testing::FaultProxy proxy({.upstream_port = nginx_->port(), .reset_every = 2});
  HttpClient client(HttpClientOptions{});
  const std::vector<uint8_t> expected =
      testing::ReadFileBytes(dir_->Join("www/idx/shard-000001.stk"));
  std::vector<std::byte> got(expected.size() - 100);
  // Request 1 (a HEAD-free GET) passes; request 2 is cut; request 3 resumes.
  HttpTransfer first;
  first.url = proxy.url() + "/idx/shard-000001.stk";
  first.dst = std::span(got).subspan(0, 10);
  ASSERT_TRUE(client.Fetch(&first).ok()) << first.status;
  HttpTransfer t;
  t.url = first.url;
  t.offset = 100;
  t.dst = got;
  ASSERT_TRUE(client.Fetch(&t).ok()) << t.status;
  EXPECT_EQ(t.retries, 1);
  EXPECT_EQ(proxy.resets(), 1u);
  EXPECT_EQ(std::memcmp(got.data(), expected.data() + 100, got.size()), 0);
  // The resumed request asked for the second half only.
  EXPECT_EQ(proxy.RequestsFor("shard-000001"), 3u);
}

TEST_F(RemoteTest, DestroyingALoaderMidRequestReturnsPromptly) {
  testing::FaultProxy proxy({.upstream_port = nginx_->port()});
  for (const Order order : {Order::kFullShuffle, Order::kQuasiRandom}) {
    proxy.SetDelay(std::chrono::milliseconds(0));
    auto slow = Shards(proxy.url() + "/idx", false);
    ASSERT_TRUE(slow);
    // From now on every request waits 3 s before it is forwarded.
    proxy.SetDelay(std::chrono::milliseconds(3000));
    auto loader = Loader::Open(slow, Options(order));
    ASSERT_TRUE(loader.ok()) << loader.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // requests in flight
    const auto start = std::chrono::steady_clock::now();
    loader->reset();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500))
        << OrderName(order);
  }
}

}  // namespace
}  // namespace stoke

namespace stoke {
namespace {

// The arithmetic the docs' 1,000-rank figures rest on, checked with a world of
// loaders in one process against nginx: an epoch costs about one GET a sample
// in full shuffle (neighbours in a shard rarely meet in a run), and about one
// GET a window in quasi order (plus, at most, one a rank and one a shard
// boundary: windows a chunk boundary or a shard end cuts), whatever the world
// size. Counted in steady state, epochs 1 to 3: what the loaders read ahead
// past the first and the last of them is nearly the same, and differs by at
// most their read-ahead (a small ring and few reads in flight keep it small).
TEST_F(RemoteTest, AWorldOfLoadersMakesTheRequestsTheArithmeticPredicts) {
  TempDir scratch;
  testing::WriteIdxSplit(scratch, 8000, 8, 8);
  auto idx = OpenIdxSplit(scratch.path(), "train");
  ASSERT_TRUE(idx.ok());
  PackOptions pack;
  pack.shard_bytes = 64 << 10;
  ASSERT_TRUE(Pack(**idx, dir_->Join("www/idx-big"), pack).ok());
  auto data = Shards(nginx_->url() + "/idx-big", false);
  ASSERT_TRUE(data);
  uint64_t stored = 0;
  for (uint64_t i = 0; i < data->size(); ++i) stored += data->Locate(i).length;
  const int world = 8;
  const int64_t epochs = 3;
  for (const Order order : {Order::kFullShuffle, Order::kQuasiRandom}) {
    uint64_t requests = 0;
    uint64_t samples = 0;
    for (int rank = 0; rank < world; ++rank) {
      LoaderOptions o = Options(order);
      o.window_bytes = 4096;
      o.rank = rank;
      o.world_size = world;
      o.ring_slots = 2;
      o.reads_in_flight = 32;
      auto loader = Loader::Open(data, o);
      ASSERT_TRUE(loader.ok()) << loader.status();
      for (Batch& b : (*loader)->Epoch(0)) (void)b;
      const uint64_t before = (*loader)->stats().http_requests;
      for (int64_t e = 1; e <= epochs; ++e) {
        for (Batch& b : (*loader)->Epoch(e)) samples += b.size();
      }
      requests += (*loader)->stats().http_requests - before;
    }
    const uint64_t per_epoch = requests / epochs;
    std::printf("%s: %llu GETs an epoch for %llu samples of %llu bytes in all, world %d\n",
                std::string(OrderName(order)).c_str(), static_cast<unsigned long long>(per_epoch),
                static_cast<unsigned long long>(samples / epochs),
                static_cast<unsigned long long>(stored), world);
    EXPECT_EQ(samples / epochs, data->size());
    // What a rank may have read ahead when it is counted: its ring and its
    // reads in flight (full shuffle), or the quasi order's three sets of
    // windows; over the ranks, per epoch counted.
    const LoaderOptions o = Options(order);
    const uint64_t ahead = order == Order::kFullShuffle
                               ? world * (2 * static_cast<uint64_t>(o.batch_size) + 32) / epochs
                               : world * 3 * static_cast<uint64_t>(o.group_windows) / epochs;
    if (order == Order::kFullShuffle) {
      EXPECT_LE(per_epoch, data->size() + ahead);
      EXPECT_GE(per_epoch + ahead, data->size() * 98 / 100);
    } else {
      const uint64_t windows = (stored + 4095) / 4096;
      EXPECT_GE(per_epoch + ahead, windows);
      EXPECT_LE(per_epoch, windows + world + data->file_count() + ahead);
    }
  }
}

}  // namespace
}  // namespace stoke
