// Decoding one stored JPEG into an output sample with ImageOptions: the crop
// (centre, or random-resized seeded from (seed, epoch, index)), the flip, the
// size and the layout. Shared by the image-file datasets and packed shards, so
// both give the same pixels for the same (options, seed, epoch, index).
#ifndef STOKE_SRC_DATASET_IMAGE_DECODE_H_
#define STOKE_SRC_DATASET_IMAGE_DECODE_H_

#include <span>
#include <string>

#include "stoke/dataset.h"
#include "stoke/image.h"

namespace stoke::internal {

// ", decoded to 224x224x3 uint8 (random-resized crop, flip)": what images
// become, for a dataset's Describe.
std::string DecodedDescription(const ImageOptions& options, const SampleSpec& spec);

// Errors are the decoder's, without the sample's name: the caller adds it
// (WithContext) on failure only, so that a success builds no string. Uses the
// calling thread's decoder; allocates nothing once it is warm.
Status DecodeImage(const ImageOptions& options, const Dataset::DecodeContext& ctx,
                   std::span<const std::byte> stored, std::span<std::byte> out);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_IMAGE_DECODE_H_
