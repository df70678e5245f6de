// The DLPack data structures (DLPack 0.8, dmlc/dlpack's include/dlpack/dlpack.h):
// the stable C ABI by which a tensor's memory crosses between frameworks
// (torch.from_dlpack, numpy.from_dlpack) without a copy. Written from the
// specification; only what stoke exports.
#ifndef STOKE_PYTHON_DLPACK_H_
#define STOKE_PYTHON_DLPACK_H_

#include <cstdint>

extern "C" {

enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
};

struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};

enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
};

struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // null: compact, row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

}  // extern "C"

#endif  // STOKE_PYTHON_DLPACK_H_
