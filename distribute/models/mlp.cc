#include "distribute/models/mlp.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/models/relu.h"

namespace distribute {
namespace models {

using devices::Shape;
using devices::Tensor;

absl::StatusOr<Mlp> Mlp::Create(std::vector<int64_t> layer_sizes,
                                devices::DType dtype) {
  if (layer_sizes.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Mlp needs at least two layer sizes (features and outputs), got ",
        layer_sizes.size()));
  }
  std::vector<Dense> layers;
  for (size_t i = 0; i + 1 < layer_sizes.size(); ++i) {
    absl::StatusOr<Dense> layer = Dense::Create(
        layer_sizes[i], layer_sizes[i + 1], /*use_bias=*/true, dtype);
    if (!layer.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Mlp layer ", i, ": ", layer.status().message()));
    }
    layers.push_back(*std::move(layer));
  }
  return Mlp(std::move(layer_sizes), std::move(layers), dtype);
}

int64_t Mlp::NumParams() const {
  int64_t n = 0;
  for (const Dense& layer : layers_) n += layer.NumParams();
  return n;
}

int64_t Mlp::NumParamTensors() const {
  return 2 * static_cast<int64_t>(layers_.size());
}

std::vector<Shape> Mlp::ParamShapes() const {
  std::vector<Shape> shapes;
  for (const Dense& layer : layers_) {
    for (Shape& shape : layer.ParamShapes()) shapes.push_back(std::move(shape));
  }
  return shapes;
}

std::vector<std::string> Mlp::ParamNames() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < layers_.size(); ++i) {
    names.push_back(absl::StrCat("dense_", i, "/kernel"));
    names.push_back(absl::StrCat("dense_", i, "/bias"));
  }
  return names;
}

uint64_t Mlp::LayerSeed(uint64_t seed, int64_t layer) {
  uint64_t z = seed + (static_cast<uint64_t>(layer) + 1) * 0x9E3779B97F4A7C15u;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

absl::StatusOr<std::vector<Tensor>> Mlp::InitParams(const ExecutionContext& ctx,
                                                    uint64_t seed) const {
  std::vector<Tensor> params;
  for (size_t i = 0; i < layers_.size(); ++i) {
    ASSIGN_OR_RETURN(
        std::vector<Tensor> layer_params,
        layers_[i].InitParams(ctx, LayerSeed(seed, static_cast<int64_t>(i))));
    for (Tensor& t : layer_params) params.push_back(std::move(t));
  }
  return params;
}

absl::Status Mlp::CheckParamCount(absl::Span<const Tensor> params) const {
  if (static_cast<int64_t>(params.size()) != NumParamTensors()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Mlp: got ", params.size(), " parameter tensors but the model has ",
        NumParamTensors(), " (a kernel and a bias per layer)"));
  }
  return absl::OkStatus();
}

absl::Span<const Tensor> Mlp::LayerParams(absl::Span<const Tensor> params,
                                          size_t i) const {
  return params.subspan(2 * i, 2);
}

absl::StatusOr<MlpActivations> Mlp::Forward(const ExecutionContext& ctx,
                                            absl::Span<const Tensor> params,
                                            const Tensor& x) const {
  RETURN_IF_ERROR(CheckParamCount(params));
  const Relu relu;
  MlpActivations acts;
  Tensor input = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    acts.layer_inputs.push_back(input);
    absl::StatusOr<Tensor> y =
        layers_[i].Forward(ctx, LayerParams(params, i), input);
    if (!y.ok()) {
      return absl::Status(
          y.status().code(),
          absl::StrCat("Mlp layer ", i, ": ", y.status().message()));
    }
    if (i + 1 == layers_.size()) {
      acts.logits = *std::move(y);
    } else {
      acts.pre_activations.push_back(*y);
      ASSIGN_OR_RETURN(input, relu.Forward(ctx, *y));
    }
  }
  return acts;
}

absl::StatusOr<std::vector<Tensor>> Mlp::Backward(
    const ExecutionContext& ctx, absl::Span<const Tensor> params,
    const MlpActivations& activations, const Tensor& dlogits) const {
  RETURN_IF_ERROR(CheckParamCount(params));
  if (activations.layer_inputs.size() != layers_.size() ||
      activations.pre_activations.size() + 1 != layers_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Mlp: the activations hold ", activations.layer_inputs.size(),
        " layer inputs and ", activations.pre_activations.size(),
        " pre-activations but the model has ", layers_.size(),
        " layers; pass what this model's Forward returned"));
  }
  const Relu relu;
  std::vector<Tensor> grads(params.size());
  Tensor dy = dlogits;
  for (size_t i = layers_.size(); i-- > 0;) {
    if (i + 1 < layers_.size()) {
      ASSIGN_OR_RETURN(dy,
                       relu.Backward(ctx, activations.pre_activations[i], dy));
    }
    absl::StatusOr<DenseGradients> g = layers_[i].Backward(
        ctx, LayerParams(params, i), activations.layer_inputs[i], dy,
        /*compute_dx=*/i > 0);
    if (!g.ok()) {
      return absl::Status(
          g.status().code(),
          absl::StrCat("Mlp layer ", i, ": ", g.status().message()));
    }
    grads[2 * i] = std::move(g->dw);
    grads[2 * i + 1] = std::move(g->db);
    dy = std::move(g->dx);
  }
  return grads;
}

double Mlp::ForwardFlopsPerExample() const {
  double flops = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    flops += layers_[i].ForwardFlopsPerExample();
    if (i + 1 < layers_.size()) {
      flops += Relu::kForwardFlopsPerElement *
               static_cast<double>(layers_[i].output_size());
    }
  }
  return flops;
}

double Mlp::FlopsPerExample() const {
  double flops = ForwardFlopsPerExample();
  for (size_t i = 0; i < layers_.size(); ++i) {
    flops += layers_[i].BackwardFlopsPerExample(/*compute_dx=*/i > 0);
    if (i + 1 < layers_.size()) {
      flops += Relu::kBackwardFlopsPerElement *
               static_cast<double>(layers_[i].output_size());
    }
  }
  return flops;
}

}  // namespace models
}  // namespace distribute
