// A small streaming JSON writer for the tool's reports.
#ifndef STOKE_TOOLS_STOKE_JSON_H_
#define STOKE_TOOLS_STOKE_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stoke::cli {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view v);
  JsonWriter& Number(double v);
  JsonWriter& Int(int64_t v);
  JsonWriter& Uint(uint64_t v);
  JsonWriter& Bool(bool v);
  JsonWriter& Null();
  const std::string& str() const { return out_; }

 private:
  void Separate();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace stoke::cli

#endif  // STOKE_TOOLS_STOKE_JSON_H_
