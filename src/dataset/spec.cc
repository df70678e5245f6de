#include <string>

#include "stoke/dataset.h"

namespace stoke {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kUint8:
    case DType::kInt8:
      return 1;
    case DType::kInt16:
    case DType::kFloat16:
      return 2;
    case DType::kInt32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kFloat64:
      return 8;
  }
  return 0;
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kUint8:
      return "uint8";
    case DType::kInt8:
      return "int8";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kFloat16:
      return "float16";
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
  }
  return "unknown";
}

StatusOr<DType> ParseDType(std::string_view text) {
  for (DType d : {DType::kUint8, DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64,
                  DType::kFloat16, DType::kFloat32, DType::kFloat64}) {
    if (DTypeName(d) == text) return d;
  }
  return InvalidArgumentError("unknown dtype '" + std::string(text) +
                              "' (expected uint8, int8, int16, int32, int64, float16, float32 "
                              "or float64)");
}

int64_t SampleSpec::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string SampleSpec::ToString() const {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  if (shape.empty()) s = "scalar";
  s += ' ';
  s += DTypeName(dtype);
  return s;
}

}  // namespace stoke
