#include "profile/conclusion.h"

#include <algorithm>

namespace stoke::internal {
namespace {

const StageCapacity* Stage(const Verdict& v, const std::string& name) {
  for (const StageCapacity& s : v.stages) {
    if (s.stage == name) return &s;
  }
  return nullptr;
}

// The lowest capacity among the input stages (read, decode, copy): what the
// pipeline could feed a faster consumer; 0 when none was measurably busy.
double InputCapacity(const Verdict& v) {
  double lowest = 0;
  for (const StageCapacity& s : v.stages) {
    if (s.stage == "consumer" || s.capacity <= 0) continue;
    lowest = lowest == 0 ? s.capacity : std::min(lowest, s.capacity);
  }
  return lowest;
}

std::string NextFromAdvice(const Verdict& v) {
  const Advice& a = v.advice.front();
  std::string next = FormatFigures("advice 1 above, about %.1fx", a.gain);
  if (a.commands.empty()) return next + ": " + a.what;
  for (size_t i = 0; i < a.commands.size(); ++i) {
    next += (i == 0 ? ": $ " : ", then $ ") + a.commands[i];
  }
  return next;
}

}  // namespace

Conclusion Conclude(const Verdict& v, const RunFacts& f) {
  Conclusion c;
  if (v.bottleneck == "too short") {
    c.learned = "nothing yet: " + v.explanation;
    c.next =
        "run longer (more --epochs, or no --max-batches) so that the rates are a steady "
        "state's, then read the bottleneck";
    return c;
  }
  const double achieved = v.achieved_samples_per_second;
  const double waited = 100 * v.starved_fraction;
  const bool idle = InputCapacity(v) == 0 && !(f.has_step && f.step_busy_seconds > 0);
  if (idle) {
    // Samples copied from memory and nothing consuming them: no stage did
    // measurable work, so there is no bottleneck to name.
    c.learned = FormatFigures(
        "the data is in memory and no step consumed it: the loader delivered %.0f samples/s "
        "(%.0f MB/s) with no stage measurably busy, far more than a training step takes",
        achieved,
        achieved * static_cast<double>(f.stats.bytes) /
            std::max(1.0, static_cast<double>(f.stats.samples)) / 1e6);
    c.next =
        "give the run a consumer: --step sleep:T with your step's time per batch, or --step "
        "MODEL (a model of this data's shape), and see whether the pipeline keeps it fed";
    return c;
  }
  if (v.bottleneck == "consumer") {
    const double input = InputCapacity(v);
    const StageCapacity* consumer = Stage(v, "consumer");
    c.learned = FormatFigures(
        "the step is the limit, not the data: it consumed %.0f samples/s and "
        "waited %.0f%% of the run for data",
        achieved, waited);
    if (input > 0) {
      c.learned +=
          FormatFigures("; the input pipeline could deliver %.0f samples/s (%.1fx headroom)", input,
                        input / std::max(achieved, 1e-9));
    }
    c.next = f.options.device.kind == DeviceKind::kCpu && consumer && consumer->capacity > 0
                 ? "make the step faster (on a GPU: --device cuda; a larger --batch); stoke "
                   "keeps it fed as it is"
                 : "make the step faster; stoke keeps it fed as it is";
    return c;
  }
  const char* what = v.bottleneck == "decode" ? "decoding"
                     : v.bottleneck == "read" ? "reading from storage"
                     : v.bottleneck == "copy" ? "the copy to the device"
                                              : "the ring's size";
  c.learned = std::string(what) +
              FormatFigures(
                  " is the limit: the pipeline delivered %.0f samples/s and the consumer "
                  "waited %.0f%% of the run; a training step that needs more than that "
                  "would wait for data too",
                  achieved, waited);
  if (!v.advice.empty()) {
    c.next = NextFromAdvice(v);
  } else if (v.bottleneck == "decode") {
    c.next = "more cores (decoding scales with them), or smaller stored images";
  } else if (v.bottleneck == "read") {
    c.next = "faster storage, or the data in RAM";
  } else {
    c.next = "see the stage table above";
  }
  return c;
}

}  // namespace stoke::internal
