// libFuzzer target: a stoke shard (records, key blob, index, meta, footer and
// its CRC): opened, then a few records read, checked and decoded.
#include "dataset/shard_format.h"
#include "fuzz_input.h"
#include "stoke/shards.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stoke::ShardsOptions o;
  o.path = stoke::fuzz::WriteScratch(std::string("s") + stoke::internal::kShardSuffix,
                                     stoke::fuzz::Bytes(data, size));
  o.image.height = o.image.width = 16;
  auto d = stoke::OpenShards(o);
  if (d.ok()) stoke::fuzz::DecodeSome(**d);
  return 0;
}
