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

// The base of the datasets whose decode depends on the (seed, epoch) of the
// context (image files, tars, shards: random crops and flips). Each implements
// DecodeSample, naming the sample on failure only; Decode is DecodeSample at
// seed 0, epoch 0.
class ContextDecodedDataset : public Dataset {
 public:
  Status Decode(uint64_t index, Span<const std::byte> stored, Span<std::byte> out,
                int64_t* label) const final {
    return DecodeSample({index, 0, 0}, stored, out, label);
  }
};

// Errors are the decoder's, without the sample's name: the caller adds it
// (WithContext) on failure only, so that a success builds no string. Uses the
// calling thread's decoder; allocates nothing once it is warm.
// The same from a pixel record (stoke pack --store raw): the same crop,
// resampled from RGB pixels (one luma channel computed after, for channels
// 1). DataLoss when `stored` is not a pixel record; InvalidArgument for the
// entropy floor's what-if, which pixels have none of.
Status DecodePixels(const ImageOptions& options, const Dataset::DecodeContext& ctx,
                    std::span<const std::byte> stored, std::span<std::byte> out);

Status DecodeImage(const ImageOptions& options, const Dataset::DecodeContext& ctx,
                   std::span<const std::byte> stored, std::span<std::byte> out);

}  // namespace stoke::internal

#endif  // STOKE_SRC_DATASET_IMAGE_DECODE_H_
