// The flags every command that runs a loader shares (`stoke profile`, `stoke
// train`): the dataset and its format, image decoding, the loader's behaviour
// and performance options, and the device. Parsing errors name the flag.
#ifndef STOKE_TOOLS_STOKE_PIPELINE_FLAGS_H_
#define STOKE_TOOLS_STOKE_PIPELINE_FLAGS_H_

#include <memory>
#include <set>
#include <string>

#include "flags.h"
#include "stoke/stoke.h"

namespace stoke::cli {

// The usage text of the shared flags, section by section.
extern const char kPipelineUsage[];

// The shared flags' names, to add to a command's own for Flags::Parse.
const std::set<std::string>& PipelineValuedFlags();
const std::set<std::string>& PipelineSwitches();

struct Pipeline {
  LoaderOptions options;
  ImageOptions image;
  std::string format;  // auto (until OpenDataset), idx, cifar, list, imagefolder, imagelist
  std::string split;   // train or test
  std::string raw_shape, raw_dtype;
  // --storage-model: every read takes the modelled device's time. Null: none.
  std::unique_ptr<FileSystem> storage;
  std::string storage_model;            // its name, or ""
  double storage_bytes_per_second = 0;  // its bandwidth (0: unlimited or none)
};

// Fills *out from `flags`; `default_batch` and `default_shuffle` are the
// command's defaults. InvalidArgument naming the flag.
Status ParsePipelineFlags(const Flags& flags, int64_t default_batch,
                          const std::string& default_shuffle, Pipeline* out);

// Reads the pipeline's data through storage model `model`: its file system,
// name and bandwidth. Modelled reads block a pread thread each, so a device
// that serves many at once (an object store) gets as many read threads,
// unless `flags` set --read-threads.
void UseStorageModel(const StorageModel& model, const Flags& flags, Pipeline* pipeline);

// Opens the dataset at `path` in `split` (detecting the format for auto).
// NotFound for a missing path; InvalidArgument when the format cannot be told;
// the dataset's own error otherwise.
StatusOr<std::shared_ptr<Dataset>> OpenDataset(const std::string& path, const std::string& split,
                                               Pipeline* pipeline);

// A loader error's message with LoaderOptions fields spelled as flags.
std::string CommandSpelling(std::string message);

// Exit status for a failed Loader::Open: 2 for a bad option or budget, else 1.
int LoaderOpenExit(const Status& status);

double PeakRssBytes();

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_PIPELINE_FLAGS_H_
