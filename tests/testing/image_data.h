// A small colour image dataset held in memory, for tests of what consumes
// image batches (the trainers): the same images as HWC (channels last, as
// images decode) or as CHW.
#ifndef STOKE_TESTS_TESTING_IMAGE_DATA_H_
#define STOKE_TESTS_TESTING_IMAGE_DATA_H_

#include <cstdint>
#include <memory>

#include "stoke/dataset.h"

namespace stoke::testing {

// n 8x8x3 uint8 images in four classes: class k has quadrant k lit, in a colour
// of its own, over noise drawn from `seed`. Sample i is the same image whichever
// the layout.
std::shared_ptr<Dataset> ColourQuadrants(uint64_t n, bool channels_last, uint32_t seed = 3);

}  // namespace stoke::testing

#endif  // STOKE_TESTS_TESTING_IMAGE_DATA_H_
