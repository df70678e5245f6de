// The Python module `stoke`: the loader as a PyTorch data source. Batches cross
// into PyTorch (or NumPy) through DLPack without a copy: a tensor is a lease on
// the loader's ring slot (or device buffer), returned when the last tensor of
// the batch is freed. Waiting for a batch releases the GIL.
//
//   import stoke, torch
//   data = stoke.ImageFolder("/data/train", size=224, crop="random", flip=True)
//   loader = stoke.Loader(data, batch_size=256, shuffle=True, dtype=torch.float16,
//                         normalize="imagenet", device="cuda:0")
//   for epoch in range(10):
//       loader.set_epoch(epoch)
//       for images, labels in loader: ...
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dlpack.h"
#include "stoke/stoke.h"

namespace py = pybind11;

namespace stoke::python {
namespace {

// Option names as Python spells them: the C++ messages name struct fields.
std::string PythonSpelling(std::string m) {
  for (const char* prefix : {"LoaderOptions.", "ImageOptions.", "ShardsOptions.", "TarOptions."}) {
    for (size_t at; (at = m.find(prefix)) != std::string::npos;) m.erase(at, std::strlen(prefix));
  }
  return m;
}

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// InvalidArgument as ValueError, NotFound as FileNotFoundError, the rest as
// stoke.Error (a RuntimeError); the message names the option or the file.
[[noreturn]] void Raise(const Status& s, const std::string& hint = "") {
  const std::string m = PythonSpelling(s.message()) + hint;
  if (s.code() == StatusCode::kInvalidArgument) throw py::value_error(m);
  if (s.code() == StatusCode::kNotFound) {
    PyErr_SetString(PyExc_FileNotFoundError, m.c_str());
    throw py::error_already_set();
  }
  throw Error(std::string(StatusCodeName(s.code())) + ": " + m);
}

template <typename T>
T Take(StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return std::move(v).value();
}

// ---- Datasets ----

struct PyDataset {
  std::shared_ptr<Dataset> dataset;
};

std::pair<int, int> Size(const py::object& size) {
  if (py::isinstance<py::int_>(size)) return {size.cast<int>(), size.cast<int>()};
  const auto hw = size.cast<std::pair<int, int>>();
  return hw;
}

ImageOptions Image(const py::object& size, const std::string& crop, bool flip, int channels,
                   const std::string& layout, std::pair<double, double> scale,
                   std::pair<double, double> ratio, double center_fraction) {
  ImageOptions o;
  std::tie(o.height, o.width) = Size(size);
  if (crop == "random" || crop == "random-resized") {
    o.crop = CropMode::kRandomResized;
  } else if (crop != "center") {
    throw py::value_error("crop: '" + crop + "' is not 'center' or 'random'");
  }
  if (layout == "chw") {
    o.order = PixelOrder::kChw;
  } else if (layout != "hwc") {
    throw py::value_error("layout: '" + layout + "' is not 'hwc' or 'chw'");
  }
  o.flip = flip;
  o.channels = channels;
  std::tie(o.min_scale, o.max_scale) = scale;
  std::tie(o.min_ratio, o.max_ratio) = ratio;
  o.center_fraction = center_fraction;
  return o;
}

// ---- Batches as DLPack tensors ----

// A delivered batch, held while any tensor made from it lives; it keeps its
// loader alive too (tensors may outlive the Python Loader), and releases the
// batch before the loader goes.
struct Lease {
  Lease(std::shared_ptr<Loader> l, Batch b) : loader(std::move(l)), batch(std::move(b)) {}
  std::shared_ptr<Loader> loader;  // declared first: destroyed after the batch
  Batch batch;
};

// One DLPack export: the managed tensor, its shape, and its share of the lease.
struct Exported {
  DLManagedTensor managed{};
  std::array<int64_t, 9> shape{};
  std::shared_ptr<Lease> lease;
};

void DeleteExported(DLManagedTensor* t) { delete static_cast<Exported*>(t->manager_ctx); }

void DeleteUnconsumedCapsule(PyObject* capsule) {
  // A capsule the consumer took is renamed "used_dltensor"; one never taken
  // still owns its tensor.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (t && t->deleter) t->deleter(t);
  }
}

DLDataType DlType(DType t) {
  switch (t) {
    case DType::kUint8:
      return {kDLUInt, 8, 1};
    case DType::kInt8:
      return {kDLInt, 8, 1};
    case DType::kInt16:
      return {kDLInt, 16, 1};
    case DType::kInt32:
      return {kDLInt, 32, 1};
    case DType::kInt64:
      return {kDLInt, 64, 1};
    case DType::kFloat16:
      return {kDLFloat, 16, 1};
    case DType::kFloat32:
      return {kDLFloat, 32, 1};
    case DType::kFloat64:
      return {kDLFloat, 64, 1};
  }
  return {kDLUInt, 8, 1};
}

// The images or the labels of a batch, exported with __dlpack__.
class BatchArray {
 public:
  BatchArray(std::shared_ptr<Lease> lease, bool labels)
      : lease_(std::move(lease)), labels_(labels) {}

  py::tuple DlpackDevice() const {
    const DeviceSpec d = lease_->batch.device();
    return py::make_tuple(d.kind == DeviceKind::kCuda ? int{kDLCUDA} : int{kDLCPU}, d.index);
  }

  // `stream`: the consumer's CUDA stream, made to wait for the batch's copy
  // (the host does not wait). As the array API's __dlpack__: None or 1 the
  // legacy default stream, 2 the per-thread default, -1 no synchronisation,
  // else the stream's handle.
  py::capsule Dlpack(const py::object& stream) {
    Batch& b = lease_->batch;
    const int64_t handle = stream.is_none() ? 1 : stream.cast<int64_t>();
    if (b.device().kind == DeviceKind::kCuda && handle != -1) {
      CUstream_st* s = handle == 1 ? nullptr : reinterpret_cast<CUstream_st*>(handle);
      if (Status st = b.MakeStreamWait(s); !st.ok()) Raise(st);
    }
    auto e = std::make_unique<Exported>();
    e->lease = lease_;
    DLTensor& t = e->managed.dl_tensor;
    const DeviceSpec d = b.device();
    t.device = {d.kind == DeviceKind::kCuda ? kDLCUDA : kDLCPU, d.index};
    if (labels_) {
      e->shape[0] = b.size();
      t.ndim = 1;
      t.dtype = {kDLInt, 64, 1};
      t.data =
          const_cast<int64_t*>(d.kind == DeviceKind::kCuda ? b.device_labels() : b.labels().data());
    } else {
      const auto shape = b.shape();
      std::copy(shape.begin(), shape.end(), e->shape.begin());
      t.ndim = static_cast<int32_t>(shape.size());
      t.dtype = DlType(b.dtype());
      t.data = const_cast<void*>(b.data());
    }
    t.shape = e->shape.data();
    t.strides = nullptr;
    t.byte_offset = 0;
    e->managed.manager_ctx = e.get();
    e->managed.deleter = DeleteExported;
    DLManagedTensor* managed = &e.release()->managed;
    PyObject* capsule = PyCapsule_New(managed, "dltensor", DeleteUnconsumedCapsule);
    if (!capsule) {
      managed->deleter(managed);
      throw py::error_already_set();
    }
    return py::reinterpret_steal<py::capsule>(capsule);
  }

  // Where the data lies: for tests of the zero-copy promise.
  uintptr_t data_address() const {
    const Batch& b = lease_->batch;
    return labels_ ? reinterpret_cast<uintptr_t>(b.labels().data())
                   : reinterpret_cast<uintptr_t>(b.data());
  }

 private:
  std::shared_ptr<Lease> lease_;
  bool labels_;
};

// ---- The loader ----

Order ParseShuffle(const py::object& shuffle) {
  if (py::isinstance<py::bool_>(shuffle)) {
    return shuffle.cast<bool>() ? Order::kFullShuffle : Order::kSequential;
  }
  const auto text = shuffle.cast<std::string>();
  if (text == "full") return Order::kFullShuffle;
  if (text == "quasi") return Order::kQuasiRandom;
  if (text == "block") return Order::kBlock;
  if (text == "none" || text == "sequential") return Order::kSequential;
  throw py::value_error("shuffle: '" + text +
                        "' is not True, False, 'full', 'quasi', 'block' or 'sequential'");
}

DType ParseDtype(const py::object& dtype) {
  if (dtype.is_none()) return DType::kUint8;
  std::string text = py::str(dtype);  // "torch.float16", "float16", numpy's "float16"
  if (text.rfind("torch.", 0) == 0) text = text.substr(6);
  if (text == "half") text = "float16";
  if (text == "float") text = "float32";
  auto parsed = ParseDType(text);
  if (!parsed.ok()) throw py::value_error("dtype: '" + text + "' is not a stoke dtype");
  return *parsed;
}

void ParseNormalize(const py::object& normalize, LoaderOptions* o) {
  if (normalize.is_none()) return;
  if (py::isinstance<py::str>(normalize)) {
    if (normalize.cast<std::string>() != "imagenet") {
      throw py::value_error("normalize: '" + normalize.cast<std::string>() +
                            "' is not 'imagenet' or (mean, std)");
    }
    o->normalize_mean = {0.485f, 0.456f, 0.406f};
    o->normalize_std = {0.229f, 0.224f, 0.225f};
    return;
  }
  auto pair = normalize.cast<std::pair<py::object, py::object>>();
  auto side = [](const py::object& v) {
    if (py::isinstance<py::float_>(v) || py::isinstance<py::int_>(v)) {
      return std::vector<float>{v.cast<float>()};
    }
    return v.cast<std::vector<float>>();
  };
  o->normalize_mean = side(pair.first);
  o->normalize_std = side(pair.second);
}

class PyLoader {
 public:
  PyLoader(const PyDataset& data, LoaderOptions options, bool copy)
      : dataset_(data.dataset), copy_(copy) {
    loader_ = std::shared_ptr<Loader>(Take(Loader::Open(dataset_, options)));
    epoch_ = loader_->position().epoch;
  }

  // As PyTorch's DataLoader: each iteration is a whole epoch (set_epoch's,
  // else the one after the last), from its first batch, except the first
  // iteration after load_state_dict, which resumes where the state says.
  PyLoader& Iter() {
    const Busy busy(this, "__iter__");
    if (resume_pending_) {
      resume_pending_ = false;
      return *this;
    }
    if (!(loader_->position() == Position{epoch_, 0})) Check(loader_->Seek({epoch_, 0}));
    return *this;
  }

  py::tuple Next() {
    py::tuple arrays = NextArrays();
    py::object images = Convert(arrays[0]);
    py::object labels = Convert(arrays[1]);
    if (copy_) {
      // torch tensors clone; NumPy arrays (no torch installed) copy.
      const char* copy = py::hasattr(images, "clone") ? "clone" : "copy";
      images = images.attr(copy)();
      labels = labels.attr(copy)();
    }
    return py::make_tuple(images, labels);
  }

  // The next batch's images and labels as DLPack exporters, not converted.
  py::tuple NextArrays() {
    const Busy busy(this, "__next__");
    // The wait is the loader's, not Python's: the GIL is released, in slices,
    // so that Ctrl-C (a signal handled only between them) can stop a loader
    // stalled on slow or hung storage.
    StatusOr<Batch> batch = DeadlineExceededError("");
    while (true) {
      {
        py::gil_scoped_release release;
        batch = loader_->NextFor(std::chrono::milliseconds(100));
      }
      if (batch.ok() || batch.status().code() != StatusCode::kDeadlineExceeded) break;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // KeyboardInterrupt
    }
    if (!batch.ok()) {
      Raise(batch.status(), batch.status().code() == StatusCode::kResourceExhausted
                                ? " (or pass copy=True for tensors the loader does not own)"
                                : "");
    }
    if (!*batch) {
      epoch_ = loader_->position().epoch;  // the next iteration is the next epoch
      throw py::stop_iteration();
    }
    auto lease = std::make_shared<Lease>(loader_, std::move(*batch));
    return py::make_tuple(BatchArray(lease, false), BatchArray(lease, true));
  }

  void SetEpoch(int64_t epoch) {
    if (epoch < 0) throw py::value_error("set_epoch: " + std::to_string(epoch) + " < 0");
    epoch_ = epoch;
  }

  // The position as a dict of plain values: the same on every rank at the same
  // step. "position" is PositionToText's line, which load_state_dict reads;
  // the other keys are there to read.
  py::dict StateDict() const {
    const Position at = loader_->position();
    const LoaderOptions& o = loader_->options();
    py::dict d;
    d["epoch"] = at.epoch;
    d["batch"] = at.batch;
    d["batch_size"] = o.batch_size;
    d["seed"] = o.seed;
    d["samples"] = dataset_->size();
    d["world_size"] = o.world_size;
    d["shuffle"] = std::string(OrderName(o.order));
    d["position"] = PositionToText(at);
    return d;
  }

  // Resumes where the state says, on this loader's rank, world size and batch
  // size: the same ones resume exactly; others continue the epoch with what
  // the state's ranks had not delivered (elastic resume). Another dataset, seed
  // or order is a ValueError naming what differs.
  void LoadStateDict(const py::dict& d) {
    const Busy busy(this, "load_state_dict");
    const LoaderOptions& o = loader_->options();
    auto expect = [&](const char* key, const py::object& mine) {
      if (!d.contains(key)) throw py::value_error(std::string("state_dict: no '") + key + "'");
      const py::object theirs = d[key];
      if (!theirs.equal(mine)) {
        throw py::value_error(std::string("state_dict: '") + key + "' is " +
                              std::string(py::str(d[key])) + " but this loader's is " +
                              std::string(py::str(mine)) +
                              "; a state resumes only the same dataset, seed and order");
      }
    };
    expect("seed", py::int_(o.seed));
    expect("samples", py::int_(dataset_->size()));
    expect("shuffle", py::str(std::string(OrderName(o.order))));
    Position at;
    if (d.contains("position")) {
      StatusOr<Position> parsed = ParsePosition(d["position"].cast<std::string>());
      if (!parsed.ok()) throw py::value_error("state_dict: " + parsed.status().message());
      at = std::move(*parsed);
    } else {  // a state from before elastic resume: this loader's own split
      expect("batch_size", py::int_(o.batch_size));
      expect("world_size", py::int_(o.world_size));
      at = Position{d["epoch"].cast<int64_t>(), d["batch"].cast<int64_t>()};
    }
    const Status s = loader_->Seek(at);
    if (s.code() == StatusCode::kInvalidArgument)
      throw py::value_error("state_dict: " + s.message());
    Check(s);
    epoch_ = loader_->position().epoch;
    resume_pending_ = true;
  }

  // Batches of the epoch the next iteration runs: an elastic resume's epoch
  // has what the earlier ranks left.
  int64_t Len() const { return loader_->batches_in_epoch(epoch_); }

  py::dict Stats() const {
    const LoaderStats s = loader_->stats();
    py::dict d;
    d["batches"] = s.batches;
    d["samples"] = s.samples;
    d["bytes"] = s.bytes;
    d["skipped"] = s.skipped;
    py::list skipped;
    for (const SkippedSample& k : s.skipped_samples)
      skipped.append(py::make_tuple(k.index, k.error));
    d["skipped_samples"] = skipped;
    d["consumer_wait_seconds"] = s.consumer_wait_seconds;
    d["ring_bytes"] = s.ring_bytes;
    d["arena_bytes"] = s.arena_bytes;
    d["io_backend"] = s.io_backend;
    d["http_requests"] = s.http_requests;
    d["http_retries"] = s.http_retries;
    d["device"] = s.device;
    py::list stages;
    for (const StageStats& st : s.stages) {
      const ThreadStats t = st.Total();
      py::dict sd;
      sd["name"] = st.name;
      sd["threads"] = st.threads.size();
      sd["items"] = t.items;
      sd["bytes"] = t.bytes;
      sd["busy_seconds"] = t.busy_seconds;
      sd["blocked_seconds"] = t.blocked_seconds;
      stages.append(sd);
    }
    d["stages"] = stages;
    return d;
  }

  py::dict Options() const {
    const LoaderOptions& o = loader_->options();
    py::dict d;
    d["batch_size"] = o.batch_size;
    d["ring_slots"] = o.ring_slots;
    d["device_buffers"] = o.device_buffers;
    d["read_threads"] = o.read_threads;
    d["decode_threads"] = o.decode_threads;
    d["rank"] = o.rank;
    d["world_size"] = o.world_size;
    return d;
  }

 private:
  // Marks the loader in use by one call that moves it (iterating, seeking)
  // for the call's length. The loader has one consumer: a second thread
  // calling one of these meanwhile (a seek during another thread's wait for a
  // batch) raises, rather than race the first. Taken with the GIL held, so
  // the check and the mark are one step.
  class Busy {
   public:
    Busy(PyLoader* loader, const char* call) : loader_(loader) {
      if (loader_->busy_ != nullptr) {
        throw std::runtime_error(std::string("stoke.Loader.") + call +
                                 ": the loader is in use by another thread (in " + loader_->busy_ +
                                 "); a loader has one consumer: iterate it from one thread, or "
                                 "give each thread a loader of its own");
      }
      loader_->busy_ = call;
    }
    ~Busy() { loader_->busy_ = nullptr; }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    PyLoader* const loader_;
  };

  static void Check(const Status& s) {
    if (!s.ok()) Raise(s);
  }

  // torch.from_dlpack where PyTorch is importable, else numpy.from_dlpack.
  // Kept for the process's life (never destroyed: a static py::object would be
  // released after the interpreter has finalised).
  //
  // Guarded by the GIL, not by a function-local static's initialisation guard:
  // `import torch` releases the GIL, and a second thread converting meanwhile
  // would hold the GIL while waiting on that guard, which the first thread
  // needs to finish the import (a deadlock). Two threads may both import;
  // the first to finish keeps its function.
  static py::object Convert(const py::object& array) {
    static py::object* from_dlpack = nullptr;  // guarded by the GIL
    if (from_dlpack == nullptr) {
      py::object found;
      try {
        found = py::module_::import("torch").attr("from_dlpack");
      } catch (const py::error_already_set&) {
        found = py::module_::import("numpy").attr("from_dlpack");
      }
      if (from_dlpack == nullptr) from_dlpack = new py::object(std::move(found));
    }
    return (*from_dlpack)(array);
  }

  std::shared_ptr<Dataset> dataset_;
  // Shared with the leases of live tensors: the last of them destroys it.
  std::shared_ptr<Loader> loader_;
  int64_t epoch_ = 0;
  bool resume_pending_ = false;  // the next __iter__ continues from position()
  bool copy_ = false;
  const char* busy_ = nullptr;  // guarded by the GIL; the call in progress (Busy), or null
};

}  // namespace
}  // namespace stoke::python

PYBIND11_MODULE(stoke, m) {
  using namespace stoke;
  using namespace stoke::python;
  m.doc() = "stoke: a C++ data loader that keeps a GPU fed, as a PyTorch data source";
  py::register_exception<stoke::python::Error>(m, "Error", PyExc_RuntimeError);

  py::class_<PyDataset>(m, "Dataset")
      .def("__len__", [](const PyDataset& d) { return d.dataset->size(); })
      .def("__repr__",
           [](const PyDataset& d) { return "<stoke.Dataset " + d.dataset->Describe() + ">"; })
      .def_property_readonly("shape", [](const PyDataset& d) { return d.dataset->spec().shape; })
      .def_property_readonly("dtype", [](const PyDataset& d) {
        return std::string(DTypeName(d.dataset->spec().dtype));
      });

  m.def(
      "ImageFolder",
      [](const std::string& root, const py::object& size, const std::string& crop, bool flip,
         int channels, const std::string& layout, std::pair<double, double> scale,
         std::pair<double, double> ratio, double center_fraction) {
        return PyDataset{Take(OpenImageFolder(
            {.root = root,
             .image = Image(size, crop, flip, channels, layout, scale, ratio, center_fraction)}))};
      },
      "torchvision's ImageFolder: class folders sorted by name give labels 0, 1, ...; uint8 "
      "images come as dense (N, H, W, C) with layout='hwc' (libtorch's stoke::torch gives the "
      "same bytes as (N, C, H, W) channels-last), (N, C, H, W) with layout='chw'",
      py::arg("root"), py::arg("size") = 224, py::arg("crop") = "center", py::arg("flip") = false,
      py::arg("channels") = 3, py::arg("layout") = "hwc",
      py::arg("scale") = std::make_pair(0.08, 1.0),
      py::arg("ratio") = std::make_pair(3.0 / 4.0, 4.0 / 3.0),
      py::arg("center_fraction") = 224.0 / 256.0);
  m.def(
      "Shards",
      [](const std::string& path, const py::object& size, const std::string& crop, bool flip,
         int channels, const std::string& layout, bool verify_checksums) {
        ShardsOptions o;
        o.path = path;
        o.image =
            Image(size, crop, flip, channels, layout, {0.08, 1.0}, {3.0 / 4, 4.0 / 3}, 224.0 / 256);
        o.verify_checksums = verify_checksums;
        return PyDataset{Take(OpenShards(o))};
      },
      "stoke shards (stoke pack): a folder of .stk files, or a glob; or remote: "
      "s3://BUCKET/PREFIX (AWS_ENDPOINT_URL, AWS_* credentials) or http(s)://, with a manifest "
      "or brace notation (shard-{000000..000009}.stk)",
      py::arg("path"), py::arg("size") = 224, py::arg("crop") = "center", py::arg("flip") = false,
      py::arg("channels") = 3, py::arg("layout") = "hwc", py::arg("verify_checksums") = true);
  m.def(
      "Tar",
      [](const std::string& path, const py::object& size, const std::string& crop, bool flip,
         int channels, const std::string& layout) {
        return PyDataset{
            Take(OpenTar({.path = path,
                          .image = Image(size, crop, flip, channels, layout, {0.08, 1.0},
                                         {3.0 / 4, 4.0 / 3}, 224.0 / 256)}))};
      },
      "WebDataset tars: key.jpg + key.cls members", py::arg("path"), py::arg("size") = 224,
      py::arg("crop") = "center", py::arg("flip") = false, py::arg("channels") = 3,
      py::arg("layout") = "hwc");
  m.def(
      "Idx",
      [](const std::string& dir, const std::string& split) {
        return PyDataset{Take(OpenIdxSplit(dir, split))};
      },
      "IDX (MNIST, Fashion-MNIST), gzipped or not", py::arg("dir"), py::arg("split") = "train");
  m.def(
      "Cifar",
      [](const std::string& dir, const std::string& split) {
        return PyDataset{Take(OpenCifar(dir, split))};
      },
      "CIFAR-10/100 binary batches", py::arg("dir"), py::arg("split") = "train");

  py::class_<BatchArray>(m, "BatchArray")
      .def("__dlpack__", &BatchArray::Dlpack, py::arg("stream") = py::none())
      .def("__dlpack_device__", &BatchArray::DlpackDevice)
      .def_property_readonly("data_address", &BatchArray::data_address);

  py::class_<PyLoader>(m, "Loader")
      .def(py::init([](const PyDataset& data, int64_t batch_size, const py::object& shuffle,
                       uint64_t seed, bool drop_last, const std::string& device,
                       const py::object& dtype, const py::object& normalize,
                       const std::string& on_error, int read_threads,
                       const py::object& decode_threads, int ring_slots, int device_buffers,
                       const py::object& rank, const py::object& world_size,
                       uint64_t memory_budget_bytes, bool copy) {
             LoaderOptions o;
             o.batch_size = batch_size;
             o.order = ParseShuffle(shuffle);
             o.seed = seed;
             o.drop_last = drop_last;
             auto parsed = ParseDevice(device);
             if (!parsed.ok()) throw py::value_error("device: " + parsed.status().message());
             o.device = *parsed;
             o.output_dtype = ParseDtype(dtype);
             ParseNormalize(normalize, &o);
             if (on_error == "skip") {
               o.on_error = ErrorPolicy::kSkip;
             } else if (on_error != "fail") {
               throw py::value_error("on_error: '" + on_error + "' is not 'fail' or 'skip'");
             }
             o.read_threads = read_threads;
             o.decode_threads = decode_threads.is_none() ? -1 : decode_threads.cast<int>();
             o.ring_slots = ring_slots;
             o.device_buffers = device_buffers;
             // The launcher's (torchrun's RANK and WORLD_SIZE, Open MPI's, ...)
             // when not given.
             if (rank.is_none() || world_size.is_none()) {
               if (Status s = RankFromEnvironment(&o); !s.ok()) {
                 throw py::value_error("rank: " + s.message());
               }
             }
             if (!rank.is_none()) o.rank = rank.cast<int>();
             if (!world_size.is_none()) o.world_size = world_size.cast<int>();
             o.memory_budget_bytes = memory_budget_bytes;
             return std::make_unique<PyLoader>(data, o, copy);
           }),
           py::arg("dataset"), py::arg("batch_size") = 32, py::arg("shuffle") = false,
           py::arg("seed") = 0, py::arg("drop_last") = false, py::arg("device") = "cpu",
           py::arg("dtype") = py::none(), py::arg("normalize") = py::none(),
           py::arg("on_error") = "fail", py::arg("read_threads") = 4,
           py::arg("decode_threads") = py::none(), py::arg("ring_slots") = 0,
           py::arg("device_buffers") = 2, py::arg("rank") = py::none(),
           py::arg("world_size") = py::none(), py::arg("memory_budget_bytes") = uint64_t{1} << 30,
           py::arg("copy") = false)
      .def("__iter__", &PyLoader::Iter, py::return_value_policy::reference_internal)
      .def("__next__", &PyLoader::Next)
      .def("next_arrays", &PyLoader::NextArrays,
           "The next batch as two DLPack exporters (images, labels), for any consumer")
      .def("__len__", &PyLoader::Len)
      .def("set_epoch", &PyLoader::SetEpoch, py::arg("epoch"))
      .def("state_dict", &PyLoader::StateDict)
      .def("load_state_dict", &PyLoader::LoadStateDict, py::arg("state"))
      .def("stats", &PyLoader::Stats)
      .def_property_readonly("options", &PyLoader::Options);
}
