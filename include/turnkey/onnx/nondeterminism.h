// Operators whose outputs no reference can match: they draw random numbers (docs/measurement.md,
// "Verdicts"). Pure function of the file and the inputs given; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "turnkey/common/tensor.h"
#include "turnkey/onnx/model_facts.h"

namespace turnkey::onnx_model {

// The operators of the model (subgraphs included) that draw random numbers, each once, in name
// order: Bernoulli, Multinomial, RandomNormal(Like), RandomUniform(Like), and Dropout in training
// mode (its training_mode input true: an initializer, a Constant, or the value `inputs` feed;
// a computed one counts as true). Reads the file again only when the op histogram has a Dropout.
// Throws Error(InvalidInput) as load_facts when that read fails.
std::vector<std::string> nondeterministic_operators(const ModelFacts& facts,
                                                    const std::vector<HostTensor>& inputs);

}  // namespace turnkey::onnx_model
