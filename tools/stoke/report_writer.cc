#include "report_writer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "log_axis.h"

namespace stoke::cli {
namespace {

constexpr int kWidth = 760, kHeight = 240, kLeft = 70, kRight = 20, kTop = 30, kBottom = 40;
constexpr int kBins = 60;
const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  char buf[32];
  if (std::abs(v) >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1fM", v / 1e6);
  } else if (std::abs(v) >= 1e4) {
    std::snprintf(buf, sizeof buf, "%.0fk", v / 1e3);
  } else if (std::abs(v) >= 10 || v == 0) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  }
  return buf;
}

struct Series {
  std::string name;
  std::vector<double> y;  // one per bin
};

// A line chart of series over [0, wall] seconds, y from 0 to the largest value.
std::string LineChart(const std::string& title, const std::string& unit,
                      const std::vector<Series>& series, double wall) {
  double top = 0;
  for (const Series& s : series) {
    for (double y : s.y) top = std::max(top, y);
  }
  if (top <= 0) top = 1;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(kWidth) +
                    "' height='" + std::to_string(kHeight) + "' role='img'><title>" +
                    Escape(title) + "</title>";
  svg += "<text x='" + std::to_string(kLeft) + "' y='18' class='t'>" + Escape(title) + "</text>";
  for (int i = 0; i <= 4; ++i) {  // y grid and labels
    const double y = kTop + ph - ph * i / 4;
    svg += "<line x1='" + std::to_string(kLeft) + "' x2='" + std::to_string(kWidth - kRight) +
           "' y1='" + Num(y) + "' y2='" + Num(y) + "' class='g'/>";
    svg += "<text x='" + std::to_string(kLeft - 6) + "' y='" + Num(y + 4) +
           "' class='l' text-anchor='end'>" + Num(top * i / 4) + "</text>";
  }
  for (int i = 0; i <= 5; ++i) {  // x labels in seconds
    const double x = kLeft + pw * i / 5;
    svg += "<text x='" + Num(x) + "' y='" + std::to_string(kHeight - kBottom + 16) +
           "' class='l' text-anchor='middle'>" + Num(wall * i / 5) + " s</text>";
  }
  svg += "<text x='12' y='" + std::to_string(kTop + static_cast<int>(ph / 2)) +
         "' class='l' transform='rotate(-90 12 " + std::to_string(kTop + static_cast<int>(ph / 2)) +
         ")' text-anchor='middle'>" + Escape(unit) + "</text>";
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    std::string points;
    for (size_t i = 0; i < s.y.size(); ++i) {
      const double x = kLeft + pw * (i + 0.5) / s.y.size();
      const double y = kTop + ph - ph * s.y[i] / top;
      points += Num(x) + "," + Num(y) + " ";
    }
    const char* colour = kColours[k % 6];
    svg += std::string("<polyline fill='none' stroke-width='2' stroke='") + colour + "' points='" +
           points + "'/>";
    svg += "<rect x='" + std::to_string(kLeft + 10 + 150 * static_cast<int>(k)) + "' y='" +
           std::to_string(kHeight - 14) + "' width='10' height='10' fill='" + colour +
           "'/><text x='" + std::to_string(kLeft + 24 + 150 * static_cast<int>(k)) + "' y='" +
           std::to_string(kHeight - 5) + "' class='l'>" + Escape(s.name) + "</text>";
  }
  return svg + "</svg>";
}

// Horizontal bars: each stage's achieved rate and its capacity, samples/s.
std::string BarChart(const internal::Verdict& v, const internal::Ceilings& c, int decode_threads) {
  struct Bar {
    std::string label;
    double value;
    const char* colour;
  };
  std::vector<Bar> bars;
  for (const internal::StageCapacity& s : v.stages) {
    bars.push_back({s.stage + " achieved", s.samples_per_second, kColours[0]});
    if (s.capacity > 0) bars.push_back({s.stage + " capacity", s.capacity, kColours[1]});
  }
  if (c.decode_samples_per_second_per_core > 0 && decode_threads > 0) {
    bars.push_back({"decode ceiling (1 core x threads)",
                    c.decode_samples_per_second_per_core * decode_threads, kColours[2]});
  }
  if (c.storage_random_reads_per_second_parallel > 0) {
    bars.push_back({"storage ceiling (random, 8 at a time)",
                    c.storage_random_reads_per_second_parallel, kColours[2]});
  }
  // A log axis: a read capacity of millions a second beside a decode rate of
  // thousands leaves both readable.
  std::vector<double> values;
  for (const Bar& b : bars) values.push_back(b.value);
  const LogAxis axis = LogAxis::Over(values);
  const int row = 22, height = kTop + row * static_cast<int>(bars.size()) + 28;
  const double pw = kWidth - 260 - kRight - 50;  // room for the value after the bar
  auto width_of = [&](double value) { return pw * axis.Fraction(value); };
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(kWidth) +
                    "' height='" + std::to_string(height) +
                    "' role='img'><title>Stages against capacities and ceilings</title>";
  svg +=
      "<text x='10' y='18' class='t'>Stages: achieved rate, capacity and ceilings "
      "(samples/s, log scale)</text>";
  for (double decade : axis.Decades()) {
    const double x = 260 + width_of(decade);
    svg += "<line x1='" + Num(x) + "' x2='" + Num(x) + "' y1='" + std::to_string(kTop) + "' y2='" +
           std::to_string(height - 18) + "' stroke='#ddd'/><text x='" + Num(x) + "' y='" +
           std::to_string(height - 6) + "' class='l' text-anchor='middle'>" + Num(decade) +
           "</text>";
  }
  for (size_t i = 0; i < bars.size(); ++i) {
    const int y = kTop + row * static_cast<int>(i);
    const double w = std::max(1.0, width_of(bars[i].value));
    svg += "<text x='250' y='" + std::to_string(y + 14) + "' class='l' text-anchor='end'>" +
           Escape(bars[i].label) + "</text>";
    svg += "<rect x='260' y='" + std::to_string(y + 3) + "' width='" + Num(w) +
           "' height='15' fill='" + bars[i].colour + "'/>";
    svg += "<text x='" + Num(264 + w) + "' y='" + std::to_string(y + 14) + "' class='l'>" +
           Num(bars[i].value) + "</text>";
  }
  return svg + "</svg>";
}

}  // namespace

Status WriteHtmlReport(const std::string& path, const ReportInput& in) {
  const double wall = std::max(in.wall_seconds, 1e-9);
  const double bin = wall / kBins;
  auto bin_of = [&](int64_t ns) {
    const double t = static_cast<double>(ns - in.origin_ns) * 1e-9;
    return std::clamp(static_cast<int>(t / bin), 0, kBins - 1);
  };
  // Throughput per stage (samples finished per second), ring occupancy (last
  // sample in each bin, carried forward), consumer wait (fraction of each bin).
  std::map<std::string, std::vector<double>> done;
  std::vector<double> ready(kBins, -1), wait(kBins, 0);
  for (const TraceEvent& e : in.events) {
    const double t = static_cast<double>(e.start_ns - in.origin_ns) * 1e-9;
    if (t < 0 || t > wall) continue;
    const std::string name = e.name;
    if (e.counter) {
      ready[bin_of(e.start_ns)] = static_cast<double>(e.value);
    } else if (name == "wait for batch") {
      // Spread the wait over the bins it covers.
      for (int64_t s = e.start_ns; s < e.end_ns;) {
        const int b = bin_of(s);
        const auto bin_end = in.origin_ns + static_cast<int64_t>((b + 1) * bin * 1e9);
        const int64_t until = std::min(e.end_ns, std::max(bin_end, s + 1));
        wait[b] += static_cast<double>(until - s) * 1e-9 / bin;
        s = until;
      }
    } else {
      auto& v = done[name];
      v.resize(kBins, 0);
      v[bin_of(e.end_ns)] += static_cast<double>(e.value) / bin;
    }
  }
  for (int i = 0; i < kBins; ++i) {
    if (ready[i] < 0) ready[i] = i > 0 ? ready[i - 1] : 0;
    wait[i] = std::min(wait[i], 1.0) * 100;
  }
  std::vector<Series> throughput;
  for (const char* stage : {"read", "decode", "copy", "step"}) {
    if (done.count(stage)) throughput.push_back({stage, done[stage]});
  }

  std::string html =
      "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>stoke profile: " +
      Escape(in.title) +
      "</title><style>body{font-family:sans-serif;margin:24px;max-width:820px;color:#222}"
      "pre{background:#f6f6f6;padding:10px;overflow-x:auto;font-size:12px}"
      ".t{font-size:14px;font-weight:bold}.l{font-size:11px;fill:#444}.g{stroke:#ddd}"
      ".v{background:#fff4e0;border-left:4px solid #ff7f0e;padding:8px 12px}</style></head><body>";
  html += "<h1>stoke profile</h1><p>" + Escape(in.title) + "</p>";
  html += "<p class='v'><b>Bottleneck: " + Escape(in.verdict.bottleneck) + ".</b> " +
          Escape(in.verdict.explanation) + ".</p>";
  if (!in.verdict.advice.empty()) {
    html += "<h2>What to change</h2><ol>";
    for (const internal::Advice& a : in.verdict.advice) {
      char buf[96];
      std::snprintf(buf, sizeof buf, ": about %.0f samples/s (%.1fx)",
                    a.predicted_samples_per_second, a.gain);
      html += "<li>" + Escape(a.what) + buf + "</li>";
    }
    html += "</ol>";
  }
  html += "<h2>Over time</h2>";
  html += LineChart("Throughput per stage", "samples/s", throughput, wall);
  html += LineChart("Ring occupancy", "batches ready", {{"batches ready", ready}}, wall);
  html += LineChart("Consumer waiting for data", "% of time", {{"waiting", wait}}, wall);
  html += "<h2>Stages</h2>" + BarChart(in.verdict, in.ceilings, in.decode_threads);
  html += "<h2>Report</h2><pre>" + Escape(in.summary) + "</pre></body></html>\n";
  std::ofstream out(path);
  out << html;
  if (!out) return ErrnoToStatus(errno, "--report " + path + ": cannot write");
  return Status::Ok();
}

}  // namespace stoke::cli
