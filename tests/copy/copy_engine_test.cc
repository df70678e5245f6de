// The copy engine, on machines without a GPU: a recording device whose copies
// complete only when the consumer's stream would wait on them checks order,
// contents, buffer reuse and slot reuse; the host device checks the conversion
// on the CPU; a CUDA device without a GPU fails at open.
#include "copy/copy_engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include "loader/loader_impl.h"
#include "testing/recording_device.h"
#include "testing/test_data.h"

namespace stoke {
namespace {

using testing::RecordingDevice;
using testing::SampleByte;
using testing::SampleLabel;

constexpr int kRows = 6;
constexpr int kCols = 5;
constexpr size_t kSampleBytes = kRows * kCols;

class CopyEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteIdxSplit(dir_, 200, kRows, kCols);
    auto d = OpenIdxSplit(dir_.path(), "train");
    ASSERT_TRUE(d.ok()) << d.status();
    dataset_ = *d;
  }

  // A loader on a recording device; device_ points at it while the loader lives.
  std::unique_ptr<Loader> OpenRecording(LoaderOptions o) {
    auto device = std::make_unique<RecordingDevice>();
    device_ = device.get();
    auto l = LoaderImpl::Create(dataset_, o, std::move(device));
    EXPECT_TRUE(l.ok()) << l.status();
    return l.ok() ? std::move(l).value() : nullptr;
  }

  // Waits for the batch's copy as a consumer stream would, then checks it.
  static void CheckCopied(Batch& b) {
    ASSERT_TRUE(b.MakeStreamWait(nullptr).ok());
    EXPECT_EQ(b.device(), (DeviceSpec{DeviceKind::kCuda, 0}));
    for (int64_t s = 0; s < b.size(); ++s) {
      const uint64_t index = b.indices()[s];
      EXPECT_EQ(b.labels()[s], SampleLabel(index));
      EXPECT_EQ(b.device_labels()[s], SampleLabel(index));
      for (size_t j = 0; j < kSampleBytes; ++j) {
        ASSERT_EQ(b.data<uint8_t>()[s * kSampleBytes + j], SampleByte(index, j))
            << "epoch " << b.epoch() << " batch " << b.index() << " sample " << s;
      }
    }
  }

  testing::TempDir dir_;
  std::shared_ptr<Dataset> dataset_;
  RecordingDevice* device_ = nullptr;
};

TEST_F(CopyEngineTest, DeviceBatchesAreTheHostBatchesInOrder) {
  LoaderOptions o{.batch_size = 16, .order = Order::kFullShuffle, .seed = 3};
  auto host = Loader::Open(dataset_, o);
  ASSERT_TRUE(host.ok()) << host.status();
  o.device_buffers = 3;
  auto loader = OpenRecording(o);
  ASSERT_NE(loader, nullptr);
  for (int epoch = 0; epoch < 2; ++epoch) {
    int64_t batches = 0;
    for (Batch& b : loader->Epoch(epoch)) {
      auto h = (*host)->Next();
      ASSERT_TRUE(h.ok()) << h.status();
      EXPECT_EQ(b.epoch(), epoch);
      EXPECT_EQ(b.index(), batches++);
      CheckCopied(b);
      ASSERT_EQ(b.size(), h->size());
      EXPECT_TRUE(std::equal(b.indices().begin(), b.indices().end(), h->indices().begin()));
    }
    EXPECT_EQ(batches, loader->batches_per_epoch());
    EXPECT_FALSE(*(*host)->Next());  // the host loader's end of epoch too
  }
  EXPECT_EQ(device_->violations(), 0);
  const LoaderStats stats = loader->stats();
  EXPECT_EQ(stats.device, "cuda:0");
  ASSERT_EQ(stats.stages.back().name, "copy");
  EXPECT_GE(stats.stages.back().Total().items, 26u);
}

TEST_F(CopyEngineTest, ImagesAndLabelsOnTwoStreamsAreBothGuarded) {
  // The Python binding exports images and labels separately; each __dlpack__
  // may name its own stream. The release guarded only the last one, so the
  // buffer could be refilled while the other stream still read it. Now the
  // first stream waits for the second's work at the release, and the buffer
  // is marked consumed on the first.
  auto loader = OpenRecording({.batch_size = 8});
  ASSERT_NE(loader, nullptr);
  auto* images = reinterpret_cast<CUstream_st*>(uintptr_t{0x10});
  auto* labels = reinterpret_cast<CUstream_st*>(uintptr_t{0x20});
  auto* third = reinterpret_cast<CUstream_st*>(uintptr_t{0x30});
  {
    auto batch = loader->Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_TRUE(batch->MakeStreamWait(images).ok());
    ASSERT_TRUE(batch->MakeStreamWait(labels).ok());
    ASSERT_TRUE(batch->MakeStreamWait(images).ok());  // known: nothing more to guard
    const Status more = batch->MakeStreamWait(third);
    EXPECT_EQ(more.code(), StatusCode::kInvalidArgument) << more;
  }
  EXPECT_EQ(device_->joins(),
            (std::vector<std::pair<CUstream_st*, CUstream_st*>>{{images, labels}}));
  ASSERT_FALSE(device_->consumed_on().empty());
  EXPECT_EQ(device_->consumed_on().back(), images);
  {
    auto batch = loader->Next();  // one stream: no join
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_TRUE(batch->MakeStreamWait(labels).ok());
  }
  EXPECT_EQ(device_->joins().size(), 1u);
  EXPECT_EQ(device_->consumed_on().back(), labels);
}

TEST_F(CopyEngineTest, SlotsAreRefilledOnlyAfterTheirCopyHasReadThem) {
  // Two ring slots, many buffers: the engine queues copies of both slots and
  // the loader can only go on once a copy completes and returns its slot. The
  // recording device copies late, so an early refill would corrupt a batch.
  auto loader = OpenRecording(
      {.batch_size = 8, .order = Order::kFullShuffle, .ring_slots = 2, .device_buffers = 6});
  ASSERT_NE(loader, nullptr);
  device_->WaitForPending(2);
  std::vector<Batch> held;
  for (int i = 0; i < 5; ++i) {
    auto b = loader->Next();
    ASSERT_TRUE(b.ok()) << b.status();
    held.push_back(std::move(b).value());
    CheckCopied(held.back());  // completes its copy, which frees a slot
  }
  for (Batch& b : held) CheckCopied(b);  // still intact while held
  held.clear();
  for (Batch& b : loader->Epoch(0)) CheckCopied(b);
  EXPECT_EQ(device_->violations(), 0);
}

TEST_F(CopyEngineTest, ASlowConsumerHoldingBatchesNeverGetsABufferRefilledUnderIt) {
  auto loader = OpenRecording({.batch_size = 10, .device_buffers = 3});
  ASSERT_NE(loader, nullptr);
  auto first = loader->Next();
  auto second = loader->Next();
  ASSERT_TRUE(first.ok() && second.ok());
  CheckCopied(*first);
  // Later batches flow through the one remaining buffer.
  for (int i = 0; i < 6; ++i) {
    auto b = loader->Next();
    ASSERT_TRUE(b.ok()) << b.status();
    CheckCopied(*b);
  }
  CheckCopied(*first);
  CheckCopied(*second);
  EXPECT_EQ(first->index(), 0);
  EXPECT_EQ(second->index(), 1);
  EXPECT_EQ(device_->violations(), 0);
}

TEST_F(CopyEngineTest, HoldingEveryBufferIsAnErrorNotAHang) {
  auto loader = OpenRecording({.batch_size = 10, .device_buffers = 2});
  ASSERT_NE(loader, nullptr);
  auto a = loader->Next();
  auto b = loader->Next();
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = loader->Next();
  EXPECT_EQ(c.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("device_buffers"), std::string::npos) << c.status();
  a->Release();
  auto d = loader->Next();
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->index(), 2);
  CheckCopied(*d);
}

TEST_F(CopyEngineTest, StoppingWithCopiesInFlightCompletesThemAndReturns) {
  {
    auto loader = OpenRecording({.batch_size = 8, .ring_slots = 3, .device_buffers = 4});
    ASSERT_NE(loader, nullptr);
    device_->WaitForPending(3);
  }  // destroyed with three copies queued and none waited on
  auto loader = OpenRecording({.batch_size = 8, .ring_slots = 3, .device_buffers = 4});
  ASSERT_NE(loader, nullptr);
  device_->WaitForPending(3);
  ASSERT_TRUE(loader->Seek({1, 5}).ok());
  auto b = loader->Next();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->epoch(), 1);
  EXPECT_EQ(b->index(), 5);
  CheckCopied(*b);
  EXPECT_EQ(b->indices()[0], 40u);
  EXPECT_EQ(loader->position(), (Position{1, 6}));
}

TEST_F(CopyEngineTest, AFailedCopyIsStickyAndNamesTheBatch) {
  auto device = std::make_unique<RecordingDevice>();
  device->FailNextEnqueue(InternalError("cudaMemcpyAsync: cudaErrorLaunchFailure"));
  auto loader = LoaderImpl::Create(dataset_, {.batch_size = 10}, std::move(device));
  ASSERT_TRUE(loader.ok()) << loader.status();
  auto b = (*loader)->Next();
  EXPECT_EQ(b.status().code(), StatusCode::kInternal);
  EXPECT_NE(b.status().message().find("copy engine: batch 0 of epoch 0"), std::string::npos)
      << b.status();
  EXPECT_NE(b.status().message().find("cudaErrorLaunchFailure"), std::string::npos);
  EXPECT_EQ((*loader)->Next().status(), b.status());
}

// A device whose buffers are host memory and whose copies complete however a
// subclass says (Enqueue, Drain): the test devices below.
class HostBuffersDevice : public internal::Device {
 public:
  DeviceSpec spec() const override { return {DeviceKind::kCuda, 0}; }
  internal::HostMemory* slot_memory() override { return internal::AlignedHostMemory(); }
  uint64_t BytesFor(int buffers, int64_t batch_size,
                    const internal::ConvertPlan& plan) const override {
    return static_cast<uint64_t>(buffers * batch_size) * (plan.out_sample_bytes + 8);
  }
  Status Prepare(int buffers, int64_t batch_size, const internal::ConvertPlan& plan) override {
    plan_ = plan;
    data_.assign(buffers, std::vector<std::byte>(batch_size * plan.out_sample_bytes));
    labels_.assign(buffers, std::vector<int64_t>(batch_size));
    return Status::Ok();
  }
  void* data(int buffer) const override { return const_cast<std::byte*>(data_[buffer].data()); }
  const int64_t* labels(int buffer) const override { return labels_[buffer].data(); }
  Status MakeStreamWait(int, CUstream_st*) override { return Status::Ok(); }
  Status MarkConsumed(int, CUstream_st*) override { return Status::Ok(); }
  Status CopyToHost(int buffer, void* out, size_t bytes) override {
    std::memcpy(out, data_[buffer].data(), bytes);
    return Status::Ok();
  }
  double busy_seconds() const override { return 0; }
  double convert_seconds() const override { return 0; }

 protected:
  // The job's samples and labels into its buffer, at once.
  void CopyIn(const internal::CopyJob& job) {
    std::memcpy(data_[job.buffer].data(), job.data, job.samples * plan_.in_sample_bytes);
    std::memcpy(labels_[job.buffer].data(), job.labels, job.samples * sizeof(int64_t));
  }

 private:
  internal::ConvertPlan plan_;
  std::vector<std::vector<std::byte>> data_;
  std::vector<std::vector<int64_t>> labels_;
};

// A device that hands each slot back the way a CUDA host function would: on a
// thread the driver owns (here, one started per copy), not on one of stoke's.
class CallbackThreadDevice final : public HostBuffersDevice {
 public:
  ~CallbackThreadDevice() override { Join(); }
  Status Enqueue(const internal::CopyJob& job) override {
    CopyIn(job);
    std::lock_guard<std::mutex> lock(mu_);
    callbacks_.emplace_back([job] { job.host_done(job.arg); });
    return Status::Ok();
  }
  Status Drain() override {
    Join();
    return Status::Ok();
  }

 private:
  void Join() {
    std::vector<std::thread> callbacks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      callbacks.swap(callbacks_);
    }
    for (std::thread& t : callbacks) t.join();
  }

  std::mutex mu_;
  std::vector<std::thread> callbacks_;  // guarded by mu_
};

TEST_F(CopyEngineTest, NoDispatchOnADriversCallbackThread) {
  // DESIGN.md: a callback on a driver's thread may only release the slot. The
  // loader refuses to dispatch there, loudly, rather than take its locks and
  // submit reads on the driver's thread.
  auto loader = LoaderImpl::Create(dataset_, {.batch_size = 8, .ring_slots = 2},
                                   std::make_unique<CallbackThreadDevice>());
  ASSERT_TRUE(loader.ok()) << loader.status();
  Status error;
  for (int i = 0; i < 25 && error.ok(); ++i) error = (*loader)->Next().status();
  EXPECT_EQ(error.code(), StatusCode::kInternal) << error;
  EXPECT_NE(error.message().find("a thread stoke does not own"), std::string::npos) << error;
}

TEST(CopyEngineErrorsTest, ABadSampleTravelsThroughTheCopyEngineInItsBatch) {
  testing::TempDir dir;
  const std::string list = testing::WriteNpyList(dir, 40, 4, 4);
  std::filesystem::remove(dir.Join("s13.npy"));
  auto d = OpenList({.list_path = list});
  ASSERT_TRUE(d.ok()) << d.status();
  auto device = std::make_unique<RecordingDevice>();
  auto loader = LoaderImpl::Create(*d, {.batch_size = 10}, std::move(device));
  ASSERT_TRUE(loader.ok()) << loader.status();
  for (int i = 0; i < 4; ++i) {
    auto b = (*loader)->Next();
    if (i == 1) {
      EXPECT_EQ(b.status().code(), StatusCode::kNotFound) << b.status();
      EXPECT_NE(b.status().message().find("s13.npy"), std::string::npos) << b.status();
    } else {
      ASSERT_TRUE(b.ok()) << b.status();
      EXPECT_EQ(b->index(), i);
      ASSERT_TRUE(b->MakeStreamWait(nullptr).ok());
    }
  }
}

TEST_F(CopyEngineTest, TheCpuDeviceConvertsToNormalisedFloats) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    LoaderOptions o{.batch_size = 16, .order = Order::kFullShuffle};
    o.output_dtype = dtype;
    o.normalize_mean = {0.5f};
    o.normalize_std = {0.25f};
    auto loader = Loader::Open(dataset_, o);
    ASSERT_TRUE(loader.ok()) << loader.status();
    int64_t batches = 0;
    for (Batch& b : (*loader)->Epoch(0)) {
      ++batches;
      EXPECT_EQ(b.dtype(), dtype);
      EXPECT_EQ(b.device(), DeviceSpec{});
      ASSERT_EQ(b.shape().size(), 3u);
      EXPECT_EQ(b.bytes(), static_cast<size_t>(b.size()) * kSampleBytes * DTypeSize(dtype));
      EXPECT_TRUE(b.MakeStreamWait(nullptr).ok());
      for (int64_t s = 0; s < b.size(); ++s) {
        for (size_t j = 0; j < kSampleBytes; ++j) {
          const float x = SampleByte(b.indices()[s], j);
          const float want = (x / 255.0f - 0.5f) / 0.25f;
          const size_t k = s * kSampleBytes + j;
          const float got = dtype == DType::kFloat32 ? b.data<float>()[k]
                                                     : internal::HalfToFloat(b.data<uint16_t>()[k]);
          ASSERT_NEAR(got, want, dtype == DType::kFloat32 ? 1e-6 : 2e-3) << s << " " << j;
        }
      }
    }
    EXPECT_EQ(batches, 13);
    const LoaderStats stats = (*loader)->stats();
    EXPECT_EQ(stats.device, "cpu");
    EXPECT_EQ(stats.stages.back().name, "copy");
    EXPECT_EQ(stats.bytes, 200u * kSampleBytes * DTypeSize(dtype));
  }
}

TEST_F(CopyEngineTest, BadDeviceOptionsFailAtOpenNamingTheField) {
  auto l = Loader::Open(dataset_, {.device_buffers = 1});
  EXPECT_EQ(l.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(l.status().message().find("LoaderOptions.device_buffers"), std::string::npos);
  LoaderOptions o;
  o.normalize_std = {0.5f};
  l = Loader::Open(dataset_, o);
  EXPECT_NE(l.status().message().find("LoaderOptions.normalize_"), std::string::npos) << l.status();
  EXPECT_FALSE(ParseDevice("gpu").ok());
  EXPECT_FALSE(ParseDevice("cuda:").ok());
  EXPECT_FALSE(ParseDevice("cuda:x").ok());
  EXPECT_EQ(*ParseDevice("cuda:12"), (DeviceSpec{DeviceKind::kCuda, 12}));
  EXPECT_EQ(DeviceName(*ParseDevice("cuda")), "cuda:0");
}

TEST_F(CopyEngineTest, ACudaDeviceThatIsNotThereFailsAtOpen) {
  LoaderOptions o;
  o.device = {DeviceKind::kCuda, CudaDeviceCount()};  // one past the last
  auto l = Loader::Open(dataset_, o);
  EXPECT_EQ(l.status().code(), StatusCode::kUnavailable) << l.status();
  EXPECT_NE(l.status().message().find("LoaderOptions.device = cuda:"), std::string::npos)
      << l.status();
}

}  // namespace
}  // namespace stoke

namespace stoke {
namespace {

// A device after a sticky error, as the CUDA device was: Drain fails at once,
// leaving its queued copies pending, and its destructor (the CUDA device's
// completion thread, joined there) still hands each of their slots back.
class StickyErrorDevice final : public HostBuffersDevice {
 public:
  ~StickyErrorDevice() override {
    for (const internal::CopyJob& job : pending_) job.host_done(job.arg);
  }
  Status Enqueue(const internal::CopyJob& job) override {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(job);  // never completes: the device has failed
    return Status::Ok();
  }
  Status Drain() override { return InternalError("an illegal address (injected)"); }

 private:
  std::mutex mu_;
  std::vector<internal::CopyJob> pending_;  // guarded by mu_
};

TEST(CopyEngineErrorsTest, CompletionsAfterAFailedDrainDoNotOutliveTheEngine) {
  // The trainer's step raised a CUDA error and the loader is destroyed while
  // copies are queued. The device's completions ran after the engine had freed
  // what their callbacks point to (a use-after-free ASan reports); the device
  // is now destroyed first.
  testing::TempDir dir;
  testing::WriteIdxSplit(dir, 200, kRows, kCols);
  auto d = OpenIdxSplit(dir.path(), "train");
  ASSERT_TRUE(d.ok()) << d.status();
  auto loader = LoaderImpl::Create(*d, {.batch_size = 8, .ring_slots = 4},
                                   std::make_unique<StickyErrorDevice>());
  ASSERT_TRUE(loader.ok()) << loader.status();
  auto batch = (*loader)->Next();  // copies are queued and never complete
  EXPECT_TRUE(batch.ok()) << batch.status();
}  // the batch, then the loader and its engine, are destroyed here

}  // namespace
}  // namespace stoke
