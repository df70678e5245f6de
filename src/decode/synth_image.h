// Synthetic images for demos, tests and benchmarks (encoded by
// decode/jpeg_encode.h). The scenes are not trivially compressible: a gradient
// background, random shapes, a sinusoidal texture and per-pixel noise, all
// deterministic from a seed.
#ifndef STOKE_SRC_DECODE_SYNTH_IMAGE_H_
#define STOKE_SRC_DECODE_SYNTH_IMAGE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "decode/jpeg_encode.h"
#include "stoke/status.h"

namespace stoke::internal {

// width x height x 3 RGB bytes, row-major. Same seed, same pixels.
// With classes > 0, image `label` of `classes` carries a class signal a small
// model can learn: the background gradient starts from a hue of the class's
// own (spread around the colour wheel), jittered by the seed.
std::vector<uint8_t> SynthPixels(int width, int height, uint64_t seed, int label = 0,
                                 int classes = 0);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DECODE_SYNTH_IMAGE_H_
