// Position as one line of text (PositionToText, ParsePosition): "key=value"
// fields after a tag and a version, spans as "begin-end" pairs.
#include <charconv>
#include <string>
#include <string_view>

#include "stoke/options.h"

namespace stoke {
namespace {

constexpr std::string_view kTag = "stoke-position 1";

Status Bad(std::string_view field, std::string_view why) {
  return InvalidArgumentError("ParsePosition: " + std::string(field) + ": " + std::string(why));
}

template <typename T>
Status ParseNumber(std::string_view field, std::string_view text, T* out) {
  const char* end = text.data() + text.size();
  auto [at, error] = std::from_chars(text.data(), end, *out);
  if (error != std::errc() || at != end) {
    return Bad(field, "'" + std::string(text) + "' is not a number");
  }
  return Status::Ok();
}

Status ParseSpans(std::string_view text, std::vector<OrderSpan>* spans) {
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view one = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t dash = one.find('-');
    if (dash == std::string_view::npos)
      return Bad("spans", "'" + std::string(one) + "' is not A-B");
    OrderSpan s;
    STOKE_RETURN_IF_ERROR(ParseNumber("spans", one.substr(0, dash), &s.begin));
    STOKE_RETURN_IF_ERROR(ParseNumber("spans", one.substr(dash + 1), &s.end));
    if (s.begin < 0 || s.end <= s.begin) {
      return Bad("spans", "'" + std::string(one) + "' is not a span of positions (0 <= A < B)");
    }
    spans->push_back(s);
  }
  return Status::Ok();
}

}  // namespace

std::string PositionToText(const Position& p) {
  const EpochSplit& s = p.split;
  std::string text(kTag);
  text += " epoch=" + std::to_string(p.epoch) + " batch=" + std::to_string(p.batch);
  text += " size=" + std::to_string(s.dataset_size) + " seed=" + std::to_string(s.seed);
  text += " order=" + std::string(OrderName(s.order));
  text +=
      " block=" + std::to_string(s.block_samples) + " window=" + std::to_string(s.window_samples);
  text += " group=" + std::to_string(s.group_windows) + " world=" + std::to_string(s.world_size);
  text += " batch_size=" + std::to_string(s.batch_size);
  text += " drop_last=" + std::to_string(s.drop_last ? 1 : 0) + " spans=";
  for (size_t i = 0; i < s.spans.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(s.spans[i].begin) + '-' + std::to_string(s.spans[i].end);
  }
  return text;
}

StatusOr<Position> ParsePosition(std::string_view text) {
  if (text.substr(0, kTag.size()) != kTag) {
    return InvalidArgumentError("ParsePosition: not a stoke position (it starts \"" +
                                std::string(text.substr(0, 24)) + "\", not \"" + std::string(kTag) +
                                "\")");
  }
  text.remove_prefix(kTag.size());
  Position p;
  EpochSplit& s = p.split;
  constexpr std::string_view kFields[] = {"epoch", "batch",      "size",      "seed",
                                          "order", "block",      "window",    "group",
                                          "world", "batch_size", "drop_last", "spans"};
  bool seen[std::size(kFields)] = {};
  while (!text.empty()) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\n')) text.remove_prefix(1);
    if (text.empty()) break;
    const size_t space = text.find_first_of(" \n");
    const std::string_view field = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space);
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) return Bad(field, "not key=value");
    const std::string_view key = field.substr(0, eq);
    const std::string_view value = field.substr(eq + 1);
    size_t k = 0;
    while (k < std::size(kFields) && kFields[k] != key) ++k;
    if (k == std::size(kFields)) return Bad(key, "unknown field");
    if (seen[k]) return Bad(key, "given twice");
    seen[k] = true;
    int drop_last = 0;
    switch (k) {
      case 0:
        STOKE_RETURN_IF_ERROR(ParseNumber(key, value, &p.epoch));
        break;
      case 1:
        STOKE_RETURN_IF_ERROR(ParseNumber(key, value, &p.batch));
        break;
      case 2:
        STOKE_RETURN_IF_ERROR(ParseNumber(key, value, &s.dataset_size));
        break;
      case 3:
        STOKE_RETURN_IF_ERROR(ParseNumber(key, value, &s.seed));
        break;
      case 4: {
        bool found = false;
        for (Order o :
             {Order::kSequential, Order::kFullShuffle, Order::kBlock, Order::kQuasiRandom}) {
          if (OrderName(o) == value) s.order = o, found = true;
        }
        if (!found)
          return Bad(key, "'" + std::string(value) + "' is not sequential, full, block or quasi");
        break;
      }
      case 5:
        STOKE_RETURN_IF_ERROR(ParseNumber(key, value, &s.block_samples));
        break;
      case 6:
        STOKE_RETURN_IF_ERROR(ParseNumber(key, value, &s.window_samples));
        break;
      case 7:
        STOKE_RETURN_IF_ERROR(ParseNumber(key, value, &s.group_windows));
        break;
      case 8:
        STOKE_RETURN_IF_ERROR(ParseNumber(key, value, &s.world_size));
        break;
      case 9:
        STOKE_RETURN_IF_ERROR(ParseNumber(key, value, &s.batch_size));
        break;
      case 10:
        STOKE_RETURN_IF_ERROR(ParseNumber(key, value, &drop_last));
        if (drop_last != 0 && drop_last != 1) return Bad(key, "not 0 or 1");
        s.drop_last = drop_last == 1;
        break;
      case 11:
        STOKE_RETURN_IF_ERROR(ParseSpans(value, &s.spans));
        break;
    }
  }
  for (size_t k = 0; k < std::size(kFields); ++k) {
    if (!seen[k]) return Bad(kFields[k], "missing");
  }
  if (p.epoch < 0 || p.batch < 0) return Bad("epoch", "epoch and batch must be >= 0");
  if (s.dataset_size < 0 || s.world_size < 1 || s.batch_size < 0) {
    return Bad("world", "size >= 0, world >= 1 and batch_size >= 0 are needed");
  }
  return p;
}

}  // namespace stoke
