// The graph converter of convert-fp16 (convert_fp16.cpp has how it decides precisions): plans
// each node's precision from its schema, places initializers and graph inputs, emits the nodes
// with the Casts they need and updates the value types. Internal to src/transforms; one object
// converts one model, not thread-safe.
#pragma once

#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fp16_support.h"
#include "model_io.h"
#include "turnkey/transforms/transforms.h"

namespace turnkey::transforms::fp16 {

class Converter {
 public:
  Converter(onnx::ModelProto* model, const Fp16Options& options, Fp16Result* result)
      : model_(model),
        graph_(model->mutable_graph()),
        options_(options),
        result_(result),
        tensors_(result),
        op_block_(options.op_block_list.begin(), options.op_block_list.end()),
        node_block_(options.node_block_list.begin(), options.node_block_list.end()) {}

  void run() {
    types_ = detail::infer_main_graph_types(*model_);
    collect_names(*graph_, &used_);
    opset_ = static_cast<int>(detail::default_opset(*model_));
    out_demand_ = options_.keep_io_types ? F32 : F16;
    for (const auto& v : graph_->output()) {
      if (is_float(v.name())) graph_outputs_.insert(v.name());
    }
    result_->nodes_before = graph_->node_size();

    std::vector<Plan> plans;
    plans.reserve(static_cast<size_t>(graph_->node_size()));
    for (const auto& node : graph_->node()) plans.push_back(plan(node));
    place_initializers(plans);
    place_graph_inputs();
    emit_nodes(plans);
    update_types();
    result_->nodes_after = graph_->node_size();
  }

 private:
  struct Plan {
    std::vector<int> in, out;           // per input/output: kNone or the precision it uses
    std::vector<std::string> implicit;  // float values its subgraphs read (as float32)
  };

  bool is_float(const std::string& name) const {
    auto it = types_.find(name);
    return !name.empty() && it != types_.end() && is_float_tensor_type(it->second);
  }

  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int k = 1; used_.count(name); ++k) name = fmt::format("{}_{}", base, k);
    used_.insert(name);
    return name;
  }

  // Why `node` stays float32 whatever its schema allows, or nullptr.
  const char* block_reason(const onnx::NodeProto& node, const onnx::OpSchema* schema) const {
    if (!detail::is_default_domain(node.domain())) return "domain";
    if (op_block_.count(node.op_type())) return "op block list";
    if (!node.name().empty() && node_block_.count(node.name())) return "node block list";
    if (!schema) return "no schema";
    if (has_subgraph(node)) return "subgraph";
    for (const auto& a : node.attribute()) {
      if (a.name() == "sparse_value") return "sparse constant";
    }
    auto unsure = [&](const std::string& name) {
      if (name.empty()) return false;
      auto it = types_.find(name);
      // A value shape inference could not type may be float: converting around it could
      // produce a node whose T is float16 on one input and float on another.
      return it == types_.end() || is_float_container(it->second) ||
             (it->second.has_tensor_type() &&
              it->second.tensor_type().elem_type() == onnx::TensorProto::UNDEFINED);
    };
    for (const auto& i : node.input()) {
      if (unsure(i)) return "untyped value";
    }
    for (const auto& o : node.output()) {
      if (unsure(o)) return "untyped value";
    }
    return nullptr;
  }

  // A node's argument: input or output, and its index.
  struct Arg {
    bool input;
    int index;
  };
  // Arguments grouped by their formal type string ("T", "T1", "tensor(float)").
  using ArgGroups = std::map<std::string, std::vector<Arg>>;

  Plan plan(const onnx::NodeProto& node) {
    Plan p;
    p.in.assign(static_cast<size_t>(node.input_size()), kNone);
    p.out.assign(static_cast<size_t>(node.output_size()), kNone);
    const onnx::OpSchema* schema =
        detail::is_default_domain(node.domain())
            ? onnx::OpSchemaRegistry::Schema(node.op_type(), opset_, onnx::ONNX_DOMAIN)
            : nullptr;
    ArgGroups groups;
    if (block_reason(node, schema) == nullptr && group_args(node, *schema, &groups)) {
      plan_groups(node, *schema, groups, &p);
    } else {
      plan_float32(node, &p);
    }
    if (has_subgraph(node)) plan_implicit(node, &p);
    count_plan(node, p);
    return p;
  }

  // Groups the node's arguments by formal type; false where one has no formal or is part of a
  // heterogeneous variadic (the node then stays float32).
  static bool group_args(const onnx::NodeProto& node, const onnx::OpSchema& schema,
                         ArgGroups* groups) {
    auto add = [&](const auto& formals, bool input, int index, const std::string& name) {
      if (name.empty()) return true;
      const auto* f = formal(formals, index);
      if (!f || (f->GetOption() == onnx::OpSchema::Variadic && !f->GetIsHomogeneous()))
        return false;
      (*groups)[f->GetTypeStr()].push_back({input, index});
      return true;
    };
    for (int j = 0; j < node.input_size(); ++j) {
      if (!add(schema.inputs(), true, j, node.input(j))) return false;
    }
    for (int k = 0; k < node.output_size(); ++k) {
      if (!add(schema.outputs(), false, k, node.output(k))) return false;
    }
    return true;
  }

  // A blocked node: every float argument float32.
  void plan_float32(const onnx::NodeProto& node, Plan* p) const {
    for (int j = 0; j < node.input_size(); ++j) {
      if (is_float(node.input(j))) p->in[static_cast<size_t>(j)] = F32;
    }
    for (int k = 0; k < node.output_size(); ++k) {
      if (is_float(node.output(k))) p->out[static_cast<size_t>(k)] = F32;
    }
  }

  // Each group with a float argument goes to float16 where its type constraint allows it and an
  // input (or, for Cast and the constants, an attribute) binds it; else float32.
  void plan_groups(const onnx::NodeProto& node, const onnx::OpSchema& schema,
                   const ArgGroups& groups, Plan* p) const {
    auto name_of = [&](const Arg& a) -> const std::string& {
      return a.input ? node.input(a.index) : node.output(a.index);
    };
    const bool type_from_attribute = node.op_type() == "Cast" || node.op_type() == "Constant" ||
                                     node.op_type() == "ConstantOfShape";
    for (const auto& [type_str, args] : groups) {
      bool any_float = false, bound_by_input = false;
      for (const Arg& a : args) {
        any_float |= is_float(name_of(a));
        bound_by_input |= a.input;
      }
      if (!any_float) continue;
      bool allows_half = type_str == "tensor(float16)";
      for (const auto& c : schema.typeConstraintParams()) {
        if (c.type_param_str != type_str) continue;
        for (const auto& t : c.allowed_type_strs) allows_half |= t == "tensor(float16)";
      }
      const int prec = allows_half && (bound_by_input || type_from_attribute) ? F16 : F32;
      for (const Arg& a : args) {
        if (is_float(name_of(a))) (a.input ? p->in : p->out)[static_cast<size_t>(a.index)] = prec;
      }
    }
  }

  // The float values the node's subgraphs read from outside them.
  void plan_implicit(const onnx::NodeProto& node, Plan* p) const {
    std::set<std::string> names;
    for (const auto& a : node.attribute()) {
      if (a.has_g()) free_names(a.g(), &names);
      for (const auto& g : a.graphs()) free_names(g, &names);
    }
    for (const auto& n : names) {
      if (is_float(n)) p->implicit.push_back(n);
    }
  }

  void count_plan(const onnx::NodeProto& node, const Plan& p) {
    bool any_float = !p.implicit.empty(), any_half = false;
    for (const auto* side : {&p.in, &p.out}) {
      for (int v : *side) {
        any_float |= v != kNone;
        any_half |= v == F16;
      }
    }
    if (any_half) {
      ++result_->nodes_fp16;
    } else if (any_float) {
      ++result_->kept_fp32_ops[op_key(node)];
    }
  }

  // Initializers take the precision their readers use; read in both, the original stays in the
  // precision of a graph output it is (else float32) and a copy holds the other.
  void place_initializers(const std::vector<Plan>& plans) {
    std::unordered_map<std::string, int> demand;  // bit 1 << prec
    for (int i = 0; i < graph_->node_size(); ++i) {
      const auto& node = graph_->node(i);
      const Plan& p = plans[static_cast<size_t>(i)];
      for (int j = 0; j < node.input_size(); ++j) {
        if (p.in[static_cast<size_t>(j)] != kNone) {
          demand[node.input(j)] |= 1 << p.in[static_cast<size_t>(j)];
        }
      }
      for (const auto& n : p.implicit) demand[n] |= 1 << F32;
    }
    for (const auto& name : graph_outputs_) demand[name] |= 1 << out_demand_;

    std::unordered_map<std::string, onnx::ValueInfoProto*> graph_inputs;
    for (auto& v : *graph_->mutable_input()) graph_inputs[v.name()] = &v;

    std::vector<onnx::TensorProto> copies;
    for (auto& t : *graph_->mutable_initializer()) {
      if (t.data_type() != onnx::TensorProto::FLOAT) continue;
      const std::string what = fmt::format("initializer '{}'", t.name());
      const int mask = demand.count(t.name()) ? demand[t.name()] : 0;
      int home = F32;
      if (mask == (1 << F16)) {
        home = F16;
      } else if (mask == ((1 << F16) | (1 << F32))) {
        home = graph_outputs_.count(t.name()) ? out_demand_ : F32;
        const int other = 1 - home;
        onnx::TensorProto copy = t;
        copy.set_name(fresh(t.name() + suffix(other)));
        if (other == F16) tensors_.convert(&copy, what);
        alias_[t.name()][static_cast<size_t>(other)] = copy.name();
        copies.push_back(std::move(copy));
        ++result_->initializers_duplicated;
      }
      if (home == F16) {
        tensors_.convert(&t, what);
        ++result_->initializers_fp16;
      } else if (mask != ((1 << F16) | (1 << F32))) {
        ++result_->initializers_kept_fp32;
      }
      home_[t.name()] = home;
      alias_[t.name()][static_cast<size_t>(home)] = t.name();
    }
    for (auto& copy : copies) {
      // IR <= 3 requires every initializer to be a graph input too.
      if (model_->ir_version() <= 3) {
        auto* v = graph_->add_input();
        v->set_name(copy.name());
        auto* tensor = v->mutable_type()->mutable_tensor_type();
        tensor->set_elem_type(copy.data_type());
        for (int64_t d : copy.dims()) tensor->mutable_shape()->add_dim()->set_dim_value(d);
      }
      *graph_->add_initializer() = std::move(copy);
    }
  }

  void place_graph_inputs() {
    for (const auto& v : graph_->input()) {
      if (home_.count(v.name()) || !is_float(v.name())) continue;  // initializers are placed
      const int home = options_.keep_io_types ? F32 : F16;
      home_[v.name()] = home;
      alias_[v.name()][static_cast<size_t>(home)] = v.name();
    }
  }

  // The name holding `value` in `prec`, adding a Cast to `nodes` when there is none yet.
  std::string get(const std::string& value, int prec, std::vector<onnx::NodeProto>* nodes) {
    auto& names = alias_[value];
    if (!names[static_cast<size_t>(prec)].empty()) return names[static_cast<size_t>(prec)];
    auto home = home_.find(value);
    if (home == home_.end()) {
      throw Error(ErrorKind::Export,
                  fmt::format("float value '{}' is read before it is produced", value));
    }
    const std::string name = fresh(value + suffix(prec));
    nodes->push_back(make_cast(names[static_cast<size_t>(home->second)], name, prec));
    new_values_.push_back({name, value});
    names[static_cast<size_t>(prec)] = name;
    return name;
  }

  onnx::NodeProto make_cast(const std::string& from, const std::string& to, int prec) {
    onnx::NodeProto cast;
    cast.set_op_type("Cast");
    cast.set_name(fresh("Cast" + std::string(suffix(prec)) + "_" + from));
    cast.add_input(from);
    cast.add_output(to);
    auto* a = cast.add_attribute();
    a->set_name("to");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(onnx_type(prec));
    ++result_->casts_added;
    return cast;
  }

  // Attribute-typed ops computing in float16: the attribute must say so.
  void rewrite_attributes(onnx::NodeProto* node) {
    const std::string what = fmt::format("node '{}'", node->name());
    if (node->op_type() == "Cast") {
      for (auto& a : *node->mutable_attribute()) {
        if (a.name() == "to") a.set_i(onnx::TensorProto::FLOAT16);
      }
    } else if (node->op_type() == "Constant") {
      auto* attrs = node->mutable_attribute();
      for (int i = 0; i < attrs->size(); ++i) {
        onnx::AttributeProto& a = attrs->at(i);
        if (a.name() == "value" && a.t().data_type() == onnx::TensorProto::FLOAT) {
          tensors_.convert(a.mutable_t(), what);
        } else if (a.name() == "value_float" || a.name() == "value_floats") {
          onnx::TensorProto t;
          t.set_data_type(onnx::TensorProto::FLOAT);
          if (a.name() == "value_float") {
            t.add_float_data(a.f());
          } else {
            t.add_dims(a.floats_size());
            for (float f : a.floats()) t.add_float_data(f);
          }
          tensors_.convert(&t, what);
          a.Clear();
          a.set_name("value");
          a.set_type(onnx::AttributeProto::TENSOR);
          *a.mutable_t() = std::move(t);
        }
      }
    } else if (node->op_type() == "ConstantOfShape") {
      bool has_value = false;
      for (auto& a : *node->mutable_attribute()) {
        if (a.name() != "value") continue;
        has_value = true;
        if (a.t().data_type() == onnx::TensorProto::FLOAT) tensors_.convert(a.mutable_t(), what);
      }
      if (!has_value) {  // the default is a float32 zero
        auto* a = node->add_attribute();
        a->set_name("value");
        a->set_type(onnx::AttributeProto::TENSOR);
        a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT16);
        a->mutable_t()->add_dims(1);
        a->mutable_t()->set_raw_data(std::string(2, '\0'));
      }
    }
  }

  void emit_nodes(const std::vector<Plan>& plans) {
    std::vector<onnx::NodeProto> nodes;
    nodes.reserve(static_cast<size_t>(graph_->node_size()) * 2);
    for (int i = 0; i < graph_->node_size(); ++i) {
      onnx::NodeProto node = std::move(*graph_->mutable_node(i));
      const Plan& p = plans[static_cast<size_t>(i)];
      for (int j = 0; j < node.input_size(); ++j) {
        const int prec = p.in[static_cast<size_t>(j)];
        if (prec != kNone) node.set_input(j, get(node.input(j), prec, &nodes));
      }
      for (const auto& name : p.implicit) {
        const std::string as_float = get(name, F32, &nodes);
        if (as_float == name) continue;
        for (auto& a : *node.mutable_attribute()) {
          if (a.has_g()) rename_free(a.mutable_g(), name, as_float);
          for (auto& g : *a.mutable_graphs()) rename_free(&g, name, as_float);
        }
      }
      if (!p.out.empty() && p.out[0] == F16) rewrite_attributes(&node);
      std::vector<onnx::NodeProto> output_casts;
      for (int k = 0; k < node.output_size(); ++k) {
        const int home = p.out[static_cast<size_t>(k)];
        if (home == kNone) continue;
        const std::string value = node.output(k);
        home_[value] = home;
        if (graph_outputs_.count(value) && home != out_demand_) {
          // The graph output keeps its name (and the type keep_io_types asks for): the node
          // writes a new name, a Cast writes the output.
          const std::string inner = fresh(value + suffix(home));
          node.set_output(k, inner);
          alias_[value][static_cast<size_t>(home)] = inner;
          alias_[value][static_cast<size_t>(out_demand_)] = value;
          output_casts.push_back(make_cast(inner, value, out_demand_));
          new_values_.push_back({inner, value});
        } else {
          alias_[value][static_cast<size_t>(home)] = value;
        }
      }
      nodes.push_back(std::move(node));
      for (auto& c : output_casts) nodes.push_back(std::move(c));
    }
    graph_->clear_node();
    for (auto& n : nodes) *graph_->add_node() = std::move(n);
  }

  // Declared types follow the precision each name now holds.
  void update_types() {
    std::unordered_map<std::string, int> prec_of;
    for (const auto& [value, names] : alias_) {
      for (int p : {F32, F16}) {
        if (!names[static_cast<size_t>(p)].empty()) prec_of[names[static_cast<size_t>(p)]] = p;
      }
    }
    auto update = [&](onnx::ValueInfoProto& v) {
      auto it = prec_of.find(v.name());
      if (it == prec_of.end() || !v.type().has_tensor_type()) return;
      const int elem = v.type().tensor_type().elem_type();
      if (elem == onnx::TensorProto::FLOAT || elem == onnx::TensorProto::FLOAT16) {
        v.mutable_type()->mutable_tensor_type()->set_elem_type(onnx_type(it->second));
      }
    };
    for (auto& v : *graph_->mutable_input()) update(v);
    for (auto& v : *graph_->mutable_output()) update(v);
    for (auto& v : *graph_->mutable_value_info()) update(v);
    // Names the conversion made get a declared type (with the shape of the value they hold), so
    // the graph types itself even where an op's inference cannot (Cast-1 in opset < 6 models).
    for (const auto& [name, value] : new_values_) {
      auto* v = graph_->add_value_info();
      v->set_name(name);
      auto it = types_.find(value);
      if (it != types_.end()) *v->mutable_type() = it->second;
      v->mutable_type()->mutable_tensor_type()->set_elem_type(onnx_type(prec_of.at(name)));
    }
  }

  onnx::ModelProto* model_;
  onnx::GraphProto* graph_;
  const Fp16Options& options_;
  Fp16Result* result_;
  TensorConverter tensors_;
  std::unordered_set<std::string> op_block_, node_block_;
  std::unordered_map<std::string, onnx::TypeProto> types_;
  std::unordered_set<std::string> used_;
  int opset_ = 0;
  int out_demand_ = F32;
  std::unordered_set<std::string> graph_outputs_;  // float ones
  std::unordered_map<std::string, int> home_;      // value -> precision where produced
  std::unordered_map<std::string, std::array<std::string, 2>> alias_;  // value -> name per prec
  std::vector<std::pair<std::string, std::string>> new_values_;        // made name, value it holds
};


}  // namespace turnkey::transforms::fp16
