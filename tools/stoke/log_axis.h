// A log axis for the command's bar charts (the bench report, the profile
// report's stages): an HDD's hundred samples a second and RAM's hundreds of
// thousands both readable. Starts a decade below the smallest positive value,
// so that it is not a sliver, and ends at the decade above the largest.
#ifndef STOKE_TOOLS_STOKE_LOG_AXIS_H_
#define STOKE_TOOLS_STOKE_LOG_AXIS_H_

#include <algorithm>
#include <cmath>
#include <vector>

namespace stoke::cli {

struct LogAxis {
  double lo = 0;  // log10 of the axis's first value
  double hi = 1;  // log10 of its last

  static LogAxis Over(const std::vector<double>& values) {
    double top = 10, bottom = 0;
    for (double v : values) {
      top = std::max(top, v);
      if (v > 0) bottom = bottom > 0 ? std::min(bottom, v) : v;
    }
    LogAxis axis;
    axis.lo = std::floor(std::log10(std::max(bottom, 1.0))) - 1;
    axis.hi = std::max(axis.lo + 1, std::ceil(std::log10(top)));
    return axis;
  }
  // Where `v` lies along the axis, 0 to 1 (values below its start at 0).
  double Fraction(double v) const {
    return (std::log10(std::max(v, std::pow(10.0, lo))) - lo) / (hi - lo);
  }
  // The axis's decades: 10^lo, 10^(lo+1), ..., 10^hi.
  std::vector<double> Decades() const {
    std::vector<double> out;
    for (double d = lo; d <= hi; ++d) out.push_back(std::pow(10.0, d));
    return out;
  }
};

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_LOG_AXIS_H_
