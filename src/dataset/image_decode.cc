#include "dataset/image_decode.h"

#include "decode/crop.h"
#include "decode/jpeg_decoder.h"
#include "decode/jpeg_resample.h"
#include "decode/resize.h"

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
  using WhatIf = Dataset::DecodeContext::WhatIf;
  if (ctx.what_if == WhatIf::kEntropyOnly) return decoder.EntropyDecode(region, target);
  if (ctx.what_if == WhatIf::kCodecOnly) return decoder.CodecDecode(region, target);
  return decoder.Finish(region, target, out);
}

Status DecodePixels(const ImageOptions& options, const Dataset::DecodeContext& ctx,
                    std::span<const std::byte> stored, std::span<std::byte> out) {
  if (ctx.what_if != Dataset::DecodeContext::WhatIf::kWhole) {
    return InvalidArgumentError("decoded pixels have no JPEG data to measure");
  }
  int width = 0;
  int height = 0;
  const uint8_t* pixels = nullptr;
  if (!ParsePixelRecord(stored, &width, &height, &pixels)) {
    return DataLossError("not a pixel record of stoke pack --store raw (" +
                         std::to_string(stored.size()) + " bytes)");
  }
  SampleRandom random(SampleSeed(ctx.seed ^ options.seed, ctx.epoch, ctx.index));
  Region region;
  if (options.crop == CropMode::kRandomResized) {
    region = RandomResizedCrop(width, height, options.min_scale, options.max_scale,
                               options.min_ratio, options.max_ratio, random);
  } else {
    region = CenterCrop(width, height, options.width, options.height, options.center_fraction);
  }
  ResizeTarget target;
  target.width = options.width;
  target.height = options.height;
  target.channels = 3;
  target.flip = options.flip && random.Uniform() < 0.5;
  target.layout = options.order == PixelOrder::kHwc ? PixelLayout::kHwc : PixelLayout::kChw;
  thread_local Resampler resampler;
  if (options.channels == 3) {
    resampler.Resize(pixels, width, height, static_cast<size_t>(width) * 3, region, target, out);
    return Status::Ok();
  }
  // One channel: luma (BT.601, as a JPEG's Y) of the resampled RGB.
  thread_local std::vector<std::byte> rgb;
  rgb.resize(out.size() * 3);
  target.layout = PixelLayout::kHwc;
  resampler.Resize(pixels, width, height, static_cast<size_t>(width) * 3, region, target, rgb);
  for (size_t i = 0; i < out.size(); ++i) {
    const auto r = static_cast<uint32_t>(rgb[3 * i]);
    const auto g = static_cast<uint32_t>(rgb[3 * i + 1]);
    const auto b = static_cast<uint32_t>(rgb[3 * i + 2]);
    out[i] = static_cast<std::byte>((19595 * r + 38470 * g + 7471 * b + 32768) >> 16);
  }
  return Status::Ok();
}

}  // namespace stoke::internal
