#include "train/cuda_libs.h"

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace stoke::internal {
namespace {

// The first of `names` that loads, or Unavailable naming them all.
StatusOr<void*> Open(const char* what, std::initializer_list<const char*> names) {
  std::string errors;
  for (const char* name : names) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
    errors += std::string(errors.empty() ? "" : "; ") + dlerror();
  }
  return UnavailableError(std::string(what) +
                          " could not be loaded (the GPU trainer needs it; put its lib/ on "
                          "LD_LIBRARY_PATH, e.g. from the nvidia-* Python packages): " +
                          errors);
}

template <typename F>
Status Bind(void* handle, const char* library, const char* name, F* out) {
  dlerror();
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    const char* error = dlerror();
    return UnavailableError(std::string(library) + " lacks " + name + ": " +
                            (error ? error : "no such symbol"));
  }
  *out = reinterpret_cast<F>(symbol);
  return Status::Ok();
}

StatusOr<CudaLibs> Load() {
  CudaLibs libs;
  STOKE_ASSIGN_OR_RETURN(void* cudnn, Open("cuDNN 9", {"libcudnn.so.9", "libcudnn.so"}));
  STOKE_ASSIGN_OR_RETURN(void* cublas,
                         Open("cuBLAS", {"libcublas.so." STOKE_CUBLAS_MAJOR, "libcublas.so"}));
#define STOKE_BIND_CUDNN(name) STOKE_RETURN_IF_ERROR(Bind(cudnn, "cuDNN", #name, &libs.name));
#define STOKE_BIND_CUBLAS(name) STOKE_RETURN_IF_ERROR(Bind(cublas, "cuBLAS", #name, &libs.name));
  STOKE_CUDNN_FUNCTIONS(STOKE_BIND_CUDNN)
  STOKE_CUBLAS_FUNCTIONS(STOKE_BIND_CUBLAS)
#undef STOKE_BIND_CUDNN
#undef STOKE_BIND_CUBLAS
  return libs;
}

}  // namespace

StatusOr<const CudaLibs*> LoadCudaLibs() {
  // Never unloaded: trainers may live until exit.
  static const StatusOr<CudaLibs> loaded = Load();
  if (!loaded.ok()) return loaded.status();
  return &loaded.value();
}

}  // namespace stoke::internal
