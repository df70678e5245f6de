// The profiler's verdict: which stage bounds a run's throughput, how starved
// the consumer was, and what to change, each with its predicted figure.
//
// Each stage's capacity is the rate it would sustain if it were never idle:
// the samples it processed over its busy time per thread. The stage with the
// lowest capacity bounds the run; fixing it lifts the run to the next lowest.
// A consumer with no step (the loader alone) has no capacity limit.
#ifndef STOKE_SRC_PROFILE_VERDICT_H_
#define STOKE_SRC_PROFILE_VERDICT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "stoke/options.h"
#include "stoke/stats.h"

namespace stoke::internal {

// Rates measured on the spot (0: not measured).
struct Ceilings {
  double storage_sequential_bytes_per_second = 0;
  double storage_random_reads_per_second = 0;           // reads of one sample each, one at a time
  double storage_random_reads_per_second_parallel = 0;  // the same, 8 at a time
  double decode_samples_per_second_per_core = 0;
  // The same samples as `stoke pack` stores them (JPEGs rewritten with restart
  // markers, so that crops decode only what they cover); 0 when that changes
  // nothing (not JPEGs, or already cuttable).
  double decode_samples_per_second_per_core_packed = 0;
  // The same samples as `stoke pack --short-side resize_short_side` stores
  // them, when they are larger than the output needs (most have a short side
  // above resize_short_side, the output's x 8/7): resampled to that side,
  // with restart markers. 0 (and resize_short_side 0) otherwise.
  double decode_samples_per_second_per_core_resized = 0;
  int resize_short_side = 0;
  // The entropy floor of JPEGs: one core's rate at Huffman-decoding only what
  // each sample's crop needs, and nothing else (JpegDecoder::EntropyDecode),
  // as stored, as packed and as packed at resize_short_side (0: not measured).
  // No decode of the same bytes goes faster.
  double entropy_floor_samples_per_second_per_core = 0;
  double entropy_floor_samples_per_second_per_core_packed = 0;
  double entropy_floor_samples_per_second_per_core_resized = 0;
  // The JPEG library's share, as stored: one core's rate at decoding what each
  // crop needs with no resampling to the output or colour conversion
  // (JpegDecoder::CodecDecode); between the decode rate and the entropy floor.
  // With them it splits a sample's decode time into Huffman decoding, the
  // rest of libjpeg (IDCT) and stoke's resampling and colour (0: not measured).
  double codec_samples_per_second_per_core = 0;
  double memory_copy_bytes_per_second = 0;
  double h2d_bytes_per_second = 0;
  // Remote data (s3://, http(s)://): the store's time to the first byte of a
  // one-sample GET, one at a time (median and 99th percentile of 64), and
  // the one-sample GETs/s it serves kRemoteProbeInFlight at a time. 0: not
  // remote.
  double remote_first_byte_p50_seconds = 0;
  double remote_first_byte_p99_seconds = 0;
  double remote_requests_per_second_parallel = 0;
  // One connection's bandwidth: one GET of up to 16 MiB, from its first byte
  // to its last.
  double remote_connection_bytes_per_second = 0;
};

// GETs in flight when the profiler measures a store's parallel rate.
inline constexpr int kRemoteProbeInFlight = 64;

struct RunFacts {
  LoaderStats stats;
  double wall_seconds = 0;
  uint64_t samples = 0;                  // delivered
  double steady_samples_per_second = 0;  // over the run's second half (0: unknown)
  double step_busy_seconds = 0;          // the consumer's own work (0: no step)
  bool has_step = false;
  std::string step;       // as given: "none", "sleep:5ms", "mlp:..."
  LoaderOptions options;  // with the automatic choices made (decode threads)
  int64_t batches_per_epoch = 0;
  int cores = 1;
  uint64_t stored_bytes_per_sample = 0;  // typical
  bool file_per_sample = false;          // lists, image folders
  std::string storage_model;             // "" when none
  bool jpeg = false;                     // samples are JPEGs (packing rewrites them)
  bool remote = false;                   // the files are remote (s3://, http(s)://)
  Ceilings ceilings;
  // Commands that follow the advice, as the user would type them (empty: the
  // advice names only the flag): the same run in quasi-random order; the pack
  // of the dataset into shards; the same run on those shards, in quasi order
  // when the run shuffles, else in its own.
  std::string rerun_quasi;
  std::string pack;
  std::string rerun_packed;
  // The same, packing at the short side the ceilings chose
  // (Ceilings::resize_short_side) into its own folder.
  std::string pack_resized;
  std::string rerun_resized;
};

struct StageCapacity {
  std::string stage;              // read, decode, copy, consumer
  double samples_per_second = 0;  // achieved over the run
  double utilisation = 0;         // busy / (threads x wall), 0..1
  double capacity = 0;            // samples/s if never idle; 0: unbounded
};

struct Advice {
  std::string what;  // the change, with the flag to use
  double predicted_samples_per_second = 0;
  double gain = 0;                    // predicted / achieved
  std::vector<std::string> commands;  // run in order, they reach the prediction
};

// Samples/s that reading windows of `window_bytes` of consecutive records (the
// quasi-random order) sustains on storage of these ceilings: each window pays
// one request's overhead (a random read's time less its transfer) and streams
// the rest at the sequential rate. 0 when the ceilings are not measured.
double WindowReadRate(const Ceilings& c, double stored_bytes_per_sample, double window_bytes);

// The same for a remote store: `threads` windows in flight (the quasi order
// reads one per read thread), each a GET that waits for the first byte and
// then streams at one connection's bandwidth. 0 without the store's ceilings.
double RemoteWindowReadRate(const Ceilings& c, double stored_bytes_per_sample, double window_bytes,
                            int threads);

// A run judged needs at least this many batches and this long: shorter, its
// rates are a few timer ticks and the pipeline's start (threads, first
// reads), not a steady state.
constexpr uint64_t kMinJudgedBatches = 1;
constexpr double kMinJudgedSeconds = 0.1;

struct Verdict {
  std::vector<StageCapacity> stages;
  // read, decode, copy or consumer; "too short" for a run below the minimums
  // above, whose explanation says how many batches a verdict needs.
  std::string bottleneck;
  double starved_fraction = 0;  // consumer wait / wall
  double achieved_samples_per_second = 0;
  std::string explanation;     // one sentence in physical units
  std::vector<Advice> advice;  // best first
};

Verdict Judge(const RunFacts& facts);

// printf of up to four figures, for the verdict's and the conclusion's
// sentences (at most 511 characters).
std::string FormatFigures(const char* fmt, double a, double b = 0, double c = 0, double d = 0);

}  // namespace stoke::internal

#endif  // STOKE_SRC_PROFILE_VERDICT_H_
