#include "train/cpu_net.h"

#include <algorithm>
#include <cmath>
#include <dnnl.hpp>
#include <string>
#include <unordered_map>

#include "train/loss.h"

namespace stoke::internal {

using dnnl::memory;
using Tag = memory::format_tag;
using Args = std::unordered_map<int, memory>;
constexpr auto kF32 = memory::data_type::f32;

struct CpuNet::Engine {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

// One layer of one pass: its primitives and their arguments, bound once.
struct LayerPass {
  dnnl::primitive forward;
  Args forward_args;
  dnnl::primitive backward_data;  // empty for the first parametrised layer
  Args backward_data_args;
  dnnl::primitive backward_weights;  // parametrised layers only
  Args backward_weights_args;
  std::vector<float> workspace;  // max pooling's
};

struct CpuNet::Pass {
  int64_t n = 0;
  // acts[i] is the input of layer i, acts[layers] the logits; diffs[i] the
  // gradient of the loss with respect to acts[i].
  std::vector<std::vector<float>> acts;
  std::vector<std::vector<float>> diffs;
  std::vector<LayerPass> layers;
};

CpuNet::CpuNet(const ModelSpec& spec) : spec_(spec) {}
CpuNet::~CpuNet() = default;

StatusOr<std::unique_ptr<CpuNet>> CpuNet::Create(const ModelSpec& spec, uint64_t seed) {
  std::unique_ptr<CpuNet> net(new CpuNet(spec));
  try {
    net->engine_ = std::make_unique<Engine>();
  } catch (const dnnl::error& e) {
    return InternalError(std::string("oneDNN: creating the CPU engine: ") + e.what());
  }
  for (InitialParam& p : InitialParameters(spec, seed)) {
    std::vector<float> grad(p.value.size(), 0.0f);
    net->params_.push_back({std::move(p.dims), std::move(p.value), std::move(grad)});
  }
  return net;
}

namespace {

memory::desc Plain(const memory::dims& d) {
  return memory::desc(d, kF32, d.size() == 2 ? Tag::nc : Tag::nchw);
}

// A 4-D activation seen as {n, features}.
memory::desc Flat(const memory::dims& d) {
  int64_t f = 1;
  for (size_t i = 1; i < d.size(); ++i) f *= d[i];
  return memory::desc({d[0], f}, kF32, Tag::nc);
}

size_t Elements(const memory::dims& d) {
  int64_t e = 1;
  for (int64_t x : d) e *= x;
  return static_cast<size_t>(e);
}

// The shape entering each layer of a pass of n samples, then the logits'.
std::vector<memory::dims> LayerShapes(const ModelSpec& spec, int64_t n) {
  using Kind = LayerSpec::Kind;
  std::vector<memory::dims> shapes;
  memory::dims shape = spec.input.size() == 1
                           ? memory::dims{n, spec.input[0]}
                           : memory::dims{n, spec.input[0], spec.input[1], spec.input[2]};
  for (const LayerSpec& l : spec.layers) {
    shapes.push_back(shape);
    if (l.kind == Kind::kLinear) shape = {n, l.out};
    if (l.kind == Kind::kConv3x3) shape = {n, l.out, l.height, l.width};
    if (l.kind == Kind::kMaxPool2x2) shape = {n, l.out, l.height / 2, l.width / 2};
  }
  shapes.push_back(shape);
  return shapes;
}

// A layer's place in a pass: its input and output shapes, its activations and
// their gradients.
struct LayerIo {
  memory::dims in, out;
  float* src;
  float* dst;
  float* diff_src;
  float* diff_dst;
};

// A linear or 3x3 convolution layer (stride 1, padding 1) with weights w and
// bias b; the first parametrised layer computes no gradient for its input.
LayerPass WeightedLayer(const LayerSpec& l, const LayerIo& io, CpuNet::Param& w, CpuNet::Param& b,
                        bool first, const dnnl::engine& eng) {
  LayerPass lp;
  const bool linear = l.kind == LayerSpec::Kind::kLinear;
  const memory::desc src_md = linear ? Flat(io.in) : Plain(io.in);
  const memory::desc dst_md = Plain(io.out);
  const memory::desc w_md = linear ? memory::desc({l.out, l.in}, kF32, Tag::oi)
                                   : memory::desc({l.out, l.in, 3, 3}, kF32, Tag::oihw);
  const memory::desc b_md({l.out}, kF32, Tag::x);
  const memory src_m(src_md, eng, io.src), dst_m(dst_md, eng, io.dst);
  const memory w_m(w_md, eng, w.value.data()), b_m(b_md, eng, b.value.data());
  const memory dw_m(w_md, eng, w.grad.data()), db_m(b_md, eng, b.grad.data());
  const memory dsrc_m(src_md, eng, io.diff_src), ddst_m(dst_md, eng, io.diff_dst);
  if (linear) {
    dnnl::inner_product_forward::primitive_desc fwd(
        {dnnl::prop_kind::forward_training, src_md, w_md, b_md, dst_md}, eng);
    lp.forward = dnnl::inner_product_forward(fwd);
    dnnl::inner_product_backward_weights::primitive_desc bw({src_md, w_md, b_md, dst_md}, eng, fwd);
    lp.backward_weights = dnnl::inner_product_backward_weights(bw);
    if (!first) {
      dnnl::inner_product_backward_data::primitive_desc bd({src_md, w_md, dst_md}, eng, fwd);
      lp.backward_data = dnnl::inner_product_backward_data(bd);
    }
  } else {
    const memory::dims strides{1, 1}, pad{1, 1};
    const auto direct = dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::primitive_desc fwd(
        {dnnl::prop_kind::forward_training, direct, src_md, w_md, b_md, dst_md, strides, pad, pad},
        eng);
    lp.forward = dnnl::convolution_forward(fwd);
    dnnl::convolution_backward_weights::primitive_desc bw(
        {direct, src_md, w_md, b_md, dst_md, strides, pad, pad}, eng, fwd);
    lp.backward_weights = dnnl::convolution_backward_weights(bw);
    if (!first) {
      dnnl::convolution_backward_data::primitive_desc bd(
          {direct, src_md, w_md, dst_md, strides, pad, pad}, eng, fwd);
      lp.backward_data = dnnl::convolution_backward_data(bd);
    }
  }
  lp.forward_args = {
      {DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, w_m}, {DNNL_ARG_BIAS, b_m}, {DNNL_ARG_DST, dst_m}};
  lp.backward_weights_args = {{DNNL_ARG_SRC, src_m},
                              {DNNL_ARG_DIFF_DST, ddst_m},
                              {DNNL_ARG_DIFF_WEIGHTS, dw_m},
                              {DNNL_ARG_DIFF_BIAS, db_m}};
  lp.backward_data_args = {
      {DNNL_ARG_DIFF_DST, ddst_m}, {DNNL_ARG_WEIGHTS, w_m}, {DNNL_ARG_DIFF_SRC, dsrc_m}};
  return lp;
}

LayerPass ReluLayer(const LayerIo& io, const dnnl::engine& eng) {
  LayerPass lp;
  const memory::desc md = Plain(io.in);
  dnnl::eltwise_forward::primitive_desc fwd(
      {dnnl::prop_kind::forward_training, dnnl::algorithm::eltwise_relu, md, 0.0f, 0.0f}, eng);
  lp.forward = dnnl::eltwise_forward(fwd);
  dnnl::eltwise_backward::primitive_desc bd({dnnl::algorithm::eltwise_relu, md, md, 0.0f, 0.0f},
                                            eng, fwd);
  lp.backward_data = dnnl::eltwise_backward(bd);
  const memory src_m(md, eng, io.src), dst_m(md, eng, io.dst);
  lp.forward_args = {{DNNL_ARG_SRC, src_m}, {DNNL_ARG_DST, dst_m}};
  lp.backward_data_args = {{DNNL_ARG_SRC, src_m},
                           {DNNL_ARG_DIFF_DST, memory(md, eng, io.diff_dst)},
                           {DNNL_ARG_DIFF_SRC, memory(md, eng, io.diff_src)}};
  return lp;
}

// 2x2 max pooling, stride 2.
LayerPass PoolLayer(const LayerIo& io, const dnnl::engine& eng) {
  LayerPass lp;
  const memory::desc src_md = Plain(io.in), dst_md = Plain(io.out);
  const memory::dims two{2, 2}, zero{0, 0};
  dnnl::pooling_forward::primitive_desc fwd(
      {dnnl::prop_kind::forward_training, dnnl::algorithm::pooling_max, src_md, dst_md, two, two,
       zero, zero},
      eng);
  lp.forward = dnnl::pooling_forward(fwd);
  dnnl::pooling_backward::primitive_desc bd(
      {dnnl::algorithm::pooling_max, src_md, dst_md, two, two, zero, zero}, eng, fwd);
  lp.backward_data = dnnl::pooling_backward(bd);
  const memory::desc ws_md = fwd.workspace_desc();
  lp.workspace.resize((ws_md.get_size() + sizeof(float) - 1) / sizeof(float));
  const memory ws_m(ws_md, eng, lp.workspace.data());
  lp.forward_args = {{DNNL_ARG_SRC, memory(src_md, eng, io.src)},
                     {DNNL_ARG_DST, memory(dst_md, eng, io.dst)},
                     {DNNL_ARG_WORKSPACE, ws_m}};
  lp.backward_data_args = {{DNNL_ARG_DIFF_DST, memory(dst_md, eng, io.diff_dst)},
                           {DNNL_ARG_DIFF_SRC, memory(src_md, eng, io.diff_src)},
                           {DNNL_ARG_WORKSPACE, ws_m}};
  return lp;
}

}  // namespace

StatusOr<CpuNet::Pass*> CpuNet::PassFor(int64_t n) {
  auto it = passes_.find(n);
  if (it != passes_.end()) return it->second.get();
  auto pass = std::make_unique<Pass>();
  pass->n = n;
  const dnnl::engine& eng = engine_->engine;
  using Kind = LayerSpec::Kind;
  try {
    const std::vector<memory::dims> shapes = LayerShapes(spec_, n);
    for (const memory::dims& d : shapes) {
      pass->acts.emplace_back(Elements(d));
      pass->diffs.emplace_back(Elements(d));
    }
    size_t param = 0;
    for (size_t i = 0; i < spec_.layers.size(); ++i) {
      const LayerSpec& l = spec_.layers[i];
      const LayerIo io{shapes[i],
                       shapes[i + 1],
                       pass->acts[i].data(),
                       pass->acts[i + 1].data(),
                       pass->diffs[i].data(),
                       pass->diffs[i + 1].data()};
      if (l.kind == Kind::kLinear || l.kind == Kind::kConv3x3) {
        pass->layers.push_back(
            WeightedLayer(l, io, params_[param], params_[param + 1], param == 0, eng));
        param += 2;
      } else if (l.kind == Kind::kRelu) {
        pass->layers.push_back(ReluLayer(io, eng));
      } else {
        pass->layers.push_back(PoolLayer(io, eng));
      }
    }
  } catch (const dnnl::error& e) {
    return InternalError("oneDNN: building the pass for batches of " + std::to_string(n) + " (" +
                         spec_.text + "): " + e.what());
  }
  Pass* raw = pass.get();
  passes_[n] = std::move(pass);
  return raw;
}

StatusOr<float*> CpuNet::Input(int64_t n) {
  STOKE_ASSIGN_OR_RETURN(Pass * pass, PassFor(n));
  return pass->acts[0].data();
}

Status CpuNet::Run(int64_t n, const int64_t* labels, bool backward, train::StepResult* result) {
  STOKE_ASSIGN_OR_RETURN(Pass * pass, PassFor(n));
  dnnl::stream& s = engine_->stream;
  const size_t last = spec_.layers.size();
  try {
    for (LayerPass& lp : pass->layers) lp.forward.execute(s, lp.forward_args);
    s.wait();
    STOKE_RETURN_IF_ERROR(SoftmaxCrossEntropy(pass->acts[last].data(), labels, n, spec_.classes,
                                              backward ? pass->diffs[last].data() : nullptr,
                                              result));
    if (!backward) return Status::Ok();
    for (size_t i = last; i-- > 0;) {
      LayerPass& lp = pass->layers[i];
      if (lp.backward_weights) lp.backward_weights.execute(s, lp.backward_weights_args);
      if (lp.backward_data) lp.backward_data.execute(s, lp.backward_data_args);
    }
    s.wait();
  } catch (const dnnl::error& e) {
    return InternalError("oneDNN: running " + spec_.text + " on a batch of " + std::to_string(n) +
                         ": " + e.what());
  }
  return Status::Ok();
}

}  // namespace stoke::internal
