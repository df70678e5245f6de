// Crop regions: centre crops and torchvision's RandomResizedCrop, from a
// per-sample random stream.
#ifndef STOKE_SRC_DECODE_CROP_H_
#define STOKE_SRC_DECODE_CROP_H_

#include <cstdint>

#include "decode/resize.h"

namespace stoke::internal {

// splitmix64: a small, good, stateless-seedable generator.
class SampleRandom {
 public:
  explicit SampleRandom(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  double Uniform();                     // [0, 1)
  double Uniform(double a, double b);   // [a, b)
  int64_t Int(int64_t lo, int64_t hi);  // [lo, hi], inclusive like Python's randint

 private:
  uint64_t state_;
};

// Mixes the loader's seed, the epoch and the sample index into one stream seed.
uint64_t SampleSeed(uint64_t seed, int64_t epoch, uint64_t index);

// The centred region of aspect out_width:out_height whose size is `fraction` of
// the largest such region of a width x height image.
Region CenterCrop(int width, int height, int out_width, int out_height, double fraction);

// torchvision.transforms.RandomResizedCrop.get_params, integer pixel regions.
Region RandomResizedCrop(int width, int height, double min_scale, double max_scale,
                         double min_ratio, double max_ratio, SampleRandom& random);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DECODE_CROP_H_
