// stoke/dataset.h: what a dataset is to the loader, and the built-in formats.
//
// A Dataset is an indexed collection of samples of one fixed shape and dtype. It
// tells the loader where each sample's stored bytes are (Locate) and how to turn
// them into the output sample (Decode); the loader does all the I/O and owns all
// the threads. To add a format, implement the interface.
//
// Thread safety: after Open, every const method may be called from many threads
// at once. Locate and Decode must not allocate on success (the loader's steady
// state allocates nothing).
//
//   auto train = stoke::OpenIdxSplit("/usr/share/datasets/fashion-mnist", "train");
//   auto cifar = stoke::OpenCifar("/data/cifar-10-batches-bin", "test");
#ifndef STOKE_DATASET_H_
#define STOKE_DATASET_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stoke/file_system.h"
#include "stoke/span.h"
#include "stoke/status.h"

namespace stoke {

enum class DType : uint8_t { kUint8, kInt8, kInt16, kInt32, kInt64, kFloat16, kFloat32, kFloat64 };

size_t DTypeSize(DType dtype);
// "uint8", "float32", ...
std::string_view DTypeName(DType dtype);
// Parses a DTypeName. InvalidArgument naming `text` otherwise.
StatusOr<DType> ParseDType(std::string_view text);

// The shape and element type of every sample of a dataset.
struct SampleSpec {
  DType dtype = DType::kUint8;
  std::vector<int64_t> shape{};  // e.g. {28, 28} or {3, 32, 32}
  // The last dimension is the channels (HWC images). Otherwise a sample of rank
  // 3 or more has its channels first (CHW), and one of lower rank has one channel.
  bool channels_last = false;

  int64_t elements() const;
  size_t bytes() const { return static_cast<size_t>(elements()) * DTypeSize(dtype); }
  // "28x28 uint8"
  std::string ToString() const;
  friend bool operator==(const SampleSpec& a, const SampleSpec& b) {
    return a.dtype == b.dtype && a.shape == b.shape && a.channels_last == b.channels_last;
  }
  friend bool operator!=(const SampleSpec& a, const SampleSpec& b) { return !(a == b); }
};

// Where one sample's stored bytes live.
struct SampleLocation {
  // Non-null: the bytes are already in memory, [memory, memory + length); no I/O.
  const std::byte* memory = nullptr;
  // Otherwise an index into the dataset's files, and a byte range of that file.
  uint32_t file = 0;
  uint64_t offset = 0;
  // Bytes to read. With whole_file, the most the file may hold.
  uint64_t length = 0;
  // The sample is the whole file and its size is not known in advance: read from
  // `offset` to the end of the file, and fail with DataLoss if it holds more than
  // `length` bytes.
  bool whole_file = false;
};

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual uint64_t size() const = 0;
  virtual const SampleSpec& spec() const = 0;

  // The files samples are read from; SampleLocation::file indexes them.
  virtual uint32_t file_count() const = 0;
  virtual const std::string& file_path(uint32_t file) const = 0;
  // The file system to read them through. Never null.
  virtual FileSystem* file_system() const = 0;

  // Where sample `index` (< size()) is stored.
  virtual SampleLocation Locate(uint64_t index) const = 0;

  // True when decoding costs real computation (JPEG), so that the loader gives it
  // threads of its own, one per core (LoaderOptions::decode_threads = -1).
  virtual bool decode_is_compute_bound() const { return false; }

  // True when a sample's stored bytes are exactly its output bytes and Locate's
  // length is spec().bytes(): the loader then reads them straight into the batch
  // and Decode is called with `stored` and `out` the same span.
  virtual bool stored_as_output() const { return false; }

  // Turns the stored bytes of sample `index` into the output sample `out`
  // (spec().bytes() long) and its label. DataLoss naming the file when the stored
  // bytes are corrupt or of the wrong shape. Must not allocate on success.
  virtual Status Decode(uint64_t index, Span<const std::byte> stored, Span<std::byte> out,
                        int64_t* label) const = 0;

  // What the loader knows about the sample being decoded, for datasets whose
  // decoding is random (crops, flips): a seed that is a pure function of
  // (LoaderOptions::seed, epoch, index), so augmentations are reproducible and
  // independent of thread counts.
  struct DecodeContext {
    uint64_t index = 0;
    int64_t epoch = 0;
    uint64_t seed = 0;
    // The profiler's what-ifs, which datasets of images heed and others
    // ignore: `stored` is the sample rewritten as stoke pack would store it
    // (so no checksum of the stored record applies to it); and how much of a
    // decode to do. kEntropyOnly decodes nothing but the Huffman data this
    // sample's crop needs (the entropy floor); kCodecOnly what the crop needs
    // as the JPEG library alone would (entropy decoding and IDCT), with no
    // resampling to the output or colour conversion (the codec's share of
    // decoding). Neither writes to `out`.
    enum class WhatIf { kWhole, kEntropyOnly, kCodecOnly };
    bool rewritten = false;
    WhatIf what_if = WhatIf::kWhole;
  };
  // The loader calls this one; by default it is Decode(ctx.index, ...).
  virtual Status DecodeSample(const DecodeContext& ctx, Span<const std::byte> stored,
                              Span<std::byte> out, int64_t* label) const {
    return Decode(ctx.index, stored, out, label);
  }

  // The most stored bytes any sample has, when samples are byte ranges of
  // different lengths (packed shards): the loader sizes its read buffers by it.
  // 0 (the default): every range is as long as sample 0's.
  virtual uint64_t max_stored_bytes() const { return 0; }

  // A size nearly every sample's stored bytes fit in, when a few are much
  // larger than the rest (one 100 MB image in a folder of 100 KB JPEGs): the
  // loader sizes its read buffers by it and reads the larger samples one at a
  // time through a buffer of their own, rather than size every buffer (and so
  // the reads in flight) by the outlier. 0 (the default): no outliers; the
  // read buffers hold max_stored_bytes().
  virtual uint64_t typical_stored_bytes() const { return 0; }

  // Sample `index`'s label when it is known without decoding (a file list, an
  // image folder, packed shards); nullopt otherwise. Used by stoke pack.
  virtual std::optional<int64_t> StoredLabel(uint64_t index) const {
    (void)index;
    return std::nullopt;
  }

  // One line for messages and reports: format, location, count and spec.
  virtual std::string Describe() const = 0;
};

// Samples [begin, end) of `dataset` as a dataset of their own, indexed from 0
// (Keras's validation_split takes the last fraction this way). InvalidArgument
// unless begin < end <= dataset->size().
StatusOr<std::shared_ptr<Dataset>> Slice(std::shared_ptr<const Dataset> dataset, uint64_t begin,
                                         uint64_t end);

// ---- Samples already in memory ----
// labels.size() samples of `spec`, back to back in `samples` (spec.bytes() each,
// as they are to be delivered), with their labels: PyTorch's TensorDataset.
// `name` starts Describe. InvalidArgument, naming it, when the sizes disagree.
StatusOr<std::shared_ptr<Dataset>> FromMemory(SampleSpec spec, std::vector<std::byte> samples,
                                              std::vector<int64_t> labels,
                                              std::string name = "in memory");

// Samples indices[0], indices[1], ... of `dataset` as a dataset of their own,
// named `name` in Describe. InvalidArgument when empty or an index is past the
// dataset's end.
StatusOr<std::shared_ptr<Dataset>> Subset(std::shared_ptr<const Dataset> dataset,
                                          std::vector<uint64_t> indices, std::string name = "");

// A validation split that validates: from every class, round(fraction x its
// size) of its samples, chosen by a seeded shuffle, validate; the rest train.
// Both keep dataset order. A pure function of (dataset, fraction, seed), so it
// is the same every epoch and on resume; unlike Keras's last fraction, a
// class-sorted dataset (an ImageFolder) validates on every class. Labels come
// from StoredLabel, or from reading and decoding every sample once (CIFAR).
// InvalidArgument for a fraction outside (0, 1) or one that leaves either side
// empty; a read or decode error names the sample.
struct DatasetSplit {
  std::shared_ptr<Dataset> train;
  std::shared_ptr<Dataset> validation;
};
StatusOr<DatasetSplit> StratifiedSplit(std::shared_ptr<const Dataset> dataset, double fraction,
                                       uint64_t seed = 0);

// ---- IDX (MNIST, Fashion-MNIST), gzipped or not ----
struct IdxOptions {
  std::string images_path{};  // e.g. .../train-images-idx3-ubyte or .../train-images-idx3-ubyte.gz
  std::string labels_path{};  // the idx1 file of the same count
  FileSystem* file_system = nullptr;  // null: DefaultFileSystem()
  // Largest decompressed size accepted for a gzipped file (decompression bombs).
  uint64_t max_decompressed_bytes = uint64_t{4} << 30;
};
// Validates the magic numbers, dimensions and sizes of both files against each
// other. A gzipped images file is decompressed into memory once, here; an
// uncompressed one is read sample by sample at its offsets.
StatusOr<std::shared_ptr<Dataset>> OpenIdx(const IdxOptions& options);
// `dir` holds {split}-images-idx3-ubyte[.gz] and {split}-labels-idx1-ubyte[.gz];
// split "train" or "test" ("test" means the t10k- files).
StatusOr<std::shared_ptr<Dataset>> OpenIdxSplit(const std::string& dir, std::string_view split,
                                                FileSystem* file_system = nullptr);

// ---- CIFAR-10 / CIFAR-100 binary ----
// `dir` holds data_batch_{1..5}.bin and test_batch.bin (CIFAR-10), or train.bin
// and test.bin (CIFAR-100, whose label is the fine label). Samples are uint8
// 3x32x32 (CHW, as stored). A file whose size is not a whole number of records is
// rejected naming it.
StatusOr<std::shared_ptr<Dataset>> OpenCifar(const std::string& dir, std::string_view split,
                                             FileSystem* file_system = nullptr);

// ---- A list file of "path label" lines ----
struct ListOptions {
  std::string list_path{};
  // Each file is a NumPy .npy (header parsed and checked) unless `raw` is set, in
  // which case it holds exactly shape x dtype bytes, native byte order.
  bool raw = false;
  // Required for raw; for .npy, if empty, taken from the first file's header.
  SampleSpec spec{};
  FileSystem* file_system = nullptr;  // null: DefaultFileSystem()
};
// Paths are relative to the list file's folder unless absolute; the label is the
// last whitespace-separated field of a line; blank lines and lines starting with
// '#' are skipped. A malformed line is InvalidArgument naming the list file and
// line number. Files are not opened here (but the first one, for an .npy spec):
// a missing or wrongly shaped file is an error of its sample, naming it.
StatusOr<std::shared_ptr<Dataset>> OpenList(const ListOptions& options);

}  // namespace stoke

#endif  // STOKE_DATASET_H_
