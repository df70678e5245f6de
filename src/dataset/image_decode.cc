#include "dataset/image_decode.h"

#include "decode/crop.h"
#include "decode/jpeg_decoder.h"

namespace stoke::internal {
namespace {

// One decoder per thread, reused.
JpegDecoder& ThreadDecoder() {
  thread_local JpegDecoder decoder;
  return decoder;
}

}  // namespace

std::string DecodedDescription(const ImageOptions& options, const SampleSpec& spec) {
  return ", decoded to " + spec.ToString() + " (" + std::string(CropModeName(options.crop)) +
         " crop" + (options.flip ? ", flip" : "") + ")";
}

Status DecodeImage(const ImageOptions& options, const Dataset::DecodeContext& ctx,
                   std::span<const std::byte> stored, std::span<std::byte> out) {
  JpegDecoder& decoder = ThreadDecoder();
  JpegHeader header;
  STOKE_RETURN_IF_ERROR(decoder.Begin(stored, options.max_pixels, &header));
  SampleRandom random(SampleSeed(ctx.seed ^ options.seed, ctx.epoch, ctx.index));
  Region region;
  if (options.crop == CropMode::kRandomResized) {
    region = RandomResizedCrop(header.width, header.height, options.min_scale, options.max_scale,
                               options.min_ratio, options.max_ratio, random);
  } else {
    region = CenterCrop(header.width, header.height, options.width, options.height,
                        options.center_fraction);
  }
  ResizeTarget target;
  target.width = options.width;
  target.height = options.height;
  target.channels = options.channels;
  target.flip = options.flip && random.Uniform() < 0.5;
  target.layout = options.order == PixelOrder::kHwc ? PixelLayout::kHwc : PixelLayout::kChw;
  if (ctx.entropy_only) return decoder.EntropyDecode(region, target);
  return decoder.Finish(region, target, out);
}

}  // namespace stoke::internal
