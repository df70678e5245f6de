#include "flags.h"

#include <charconv>

namespace stoke::cli {

StatusOr<Flags> Flags::Parse(const std::vector<std::string>& args,
                             const std::set<std::string>& valued,
                             const std::set<std::string>& switches) {
  Flags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      flags.positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (switches.count(name)) {
      if (value) return InvalidArgumentError("--" + name + " takes no value");
      flags.values_[name] = "1";
    } else if (valued.count(name)) {
      if (!value) {
        if (i + 1 >= args.size()) return InvalidArgumentError("--" + name + " needs a value");
        value = args[++i];
      }
      flags.values_[name] = *value;
    } else {
      return InvalidArgumentError("unknown option --" + name + " (see stoke help)");
    }
  }
  return flags;
}

std::string Flags::String(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

StatusOr<int64_t> Flags::Int(const std::string& name, int64_t fallback, int64_t lo,
                             int64_t hi) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& text = it->second;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return InvalidArgumentError("--" + name + ": '" + text + "' is not an integer");
  }
  if (v < lo || v > hi) {
    return InvalidArgumentError("--" + name + ": " + text + " is out of range [" +
                                std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

StatusOr<uint64_t> Flags::Bytes(const std::string& name, uint64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& text = it->second;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end == text.data()) {
    return InvalidArgumentError("--" + name + ": '" + text + "' is not a byte count");
  }
  std::string suffix(end, text.data() + text.size());
  uint64_t scale = 1;
  if (suffix.empty() || suffix == "B") {
  } else if (suffix == "K" || suffix == "KiB") {
    scale = uint64_t{1} << 10;
  } else if (suffix == "M" || suffix == "MiB") {
    scale = uint64_t{1} << 20;
  } else if (suffix == "G" || suffix == "GiB") {
    scale = uint64_t{1} << 30;
  } else {
    return InvalidArgumentError("--" + name + ": unknown unit '" + suffix +
                                "' (use K, M, G or KiB, MiB, GiB)");
  }
  if (v > UINT64_MAX / scale) return InvalidArgumentError("--" + name + ": too large");
  return v * scale;
}

StatusOr<std::string> Flags::Choice(const std::string& name, const std::string& fallback,
                                    const std::vector<std::string>& choices) const {
  std::string v = String(name, fallback);
  std::string all;
  for (const std::string& c : choices) {
    if (c == v) return v;
    all += (all.empty() ? "" : "|") + c;
  }
  return InvalidArgumentError("--" + name + ": '" + v + "' is not one of " + all);
}

}  // namespace stoke::cli
