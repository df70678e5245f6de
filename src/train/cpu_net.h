// A model (model_spec.h) on oneDNN: its parameters and gradients are held once;
// for each batch size it meets, a pass (activation buffers and the forward,
// backward-data and backward-weights primitives of every layer) is built on
// first use and reused after, so a steady run creates no primitive.
//
// Thread safety: one thread at a time. oneDNN runs each primitive on its own
// threads (OpenMP).
#ifndef STOKE_SRC_TRAIN_CPU_NET_H_
#define STOKE_SRC_TRAIN_CPU_NET_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "stoke/status.h"
#include "stoke/train.h"
#include "train/model_spec.h"

namespace stoke::internal {

class CpuNet {
 public:
  // One weight or bias tensor, row-major: linear {out, in}, conv {out, in, 3, 3}.
  struct Param {
    std::vector<int64_t> dims;
    std::vector<float> value;
    std::vector<float> grad;  // of the mean loss over the last backward pass
  };

  // Initialises the parameters from `seed` (stoke/train.h).
  static StatusOr<std::unique_ptr<CpuNet>> Create(const ModelSpec& spec, uint64_t seed);
  ~CpuNet();

  // The input buffer of a pass for `n` samples (n x spec.input_elements()
  // floats), built on first use: the caller writes the batch here.
  StatusOr<float*> Input(int64_t n);
  // Runs the pass for `n` samples on what Input(n) holds: forward and the loss
  // (added to *result); with `backward`, every Param::grad. InvalidArgument
  // naming a label outside [0, classes). oneDNN's errors as Internal.
  Status Run(int64_t n, const int64_t* labels, bool backward, train::StepResult* result);

  std::vector<Param>& params() { return params_; }
  const ModelSpec& spec() const { return spec_; }

 private:
  struct Pass;
  CpuNet(const ModelSpec& spec);
  StatusOr<Pass*> PassFor(int64_t n);

  const ModelSpec spec_;
  std::vector<Param> params_;
  struct Engine;
  std::unique_ptr<Engine> engine_;
  std::map<int64_t, std::unique_ptr<Pass>> passes_;
};

}  // namespace stoke::internal

#endif  // STOKE_SRC_TRAIN_CPU_NET_H_
