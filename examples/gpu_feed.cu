// Feeding a GPU: Fashion-MNIST delivered to CUDA device 0 as normalised float32
// batches, each consumed by a kernel on the trainer's own stream. The stream
// waits for each batch's copy on the GPU; the host never synchronises inside
// the loop. Usage: gpu_feed [IDX_DIR]   (default /usr/share/datasets/fashion-mnist)
// Exits 77 (skipped) when no GPU is visible.
#include <cuda_runtime.h>

#include <cstdio>

#include "stoke/stoke.h"

// Your step here: adds each batch's pixel sum and label sum to totals[0..1].
__global__ void Step(const float* images, const int64_t* labels, int64_t samples,
                     int64_t pixels_per_sample, double* totals) {
  double pixels = 0;
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < samples * pixels_per_sample;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    pixels += images[i];
  }
  atomicAdd(&totals[0], pixels);
  if (blockIdx.x == 0 && threadIdx.x < samples) atomicAdd(&totals[1], double(labels[threadIdx.x]));
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  auto dataset = stoke::OpenIdxSplit(dir, "train");
  if (!dataset.ok()) return std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str()), 1;
  stoke::LoaderOptions options;
  options.batch_size = 256;
  options.order = stoke::Order::kFullShuffle;
  options.device = {stoke::DeviceKind::kCuda, 0};
  options.output_dtype = stoke::DType::kFloat32;  // uint8 over the bus, converted on the GPU
  options.normalize_mean = {0.2860f};
  options.normalize_std = {0.3530f};
  auto loader = stoke::Loader::Open(*dataset, options);
  if (!loader.ok()) {
    std::fprintf(stderr, "%s\n", loader.status().ToString().c_str());
    return loader.status().code() == stoke::StatusCode::kUnavailable ? 77 : 1;
  }
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  double* totals;
  cudaMalloc(&totals, 2 * sizeof(double));
  for (int epoch = 0; epoch < 2; ++epoch) {
    cudaMemsetAsync(totals, 0, 2 * sizeof(double), stream);
    for (stoke::Batch& batch : (*loader)->Epoch(epoch)) {  // throws stoke::Error on bad data
      if (stoke::Status s = batch.MakeStreamWait(stream); !s.ok()) {
        return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
      }
      Step<<<64, 256, 0, stream>>>(batch.data<float>(), batch.device_labels(), batch.size(),
                                   28 * 28, totals);
    }  // each batch is released as soon as its step is queued
    double host[2];
    cudaMemcpyAsync(host, totals, sizeof host, cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);  // once per epoch, to print
    std::printf("epoch %d: mean normalised pixel %.4f, label sum %.0f\n", epoch,
                host[0] / (60000.0 * 28 * 28), host[1]);
  }
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    return std::fprintf(stderr, "%s\n", cudaGetErrorString(e)), 1;
  }
  cudaFree(totals);
  cudaStreamDestroy(stream);
  return 0;
}
