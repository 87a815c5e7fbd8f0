//===- Mask.cpp - A mask on the scores, checked by value ------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// A mask on the scores [B, H, S, T]: its condition (or its additive term)
// is traced to a function of the position (linalg.index, integer constants
// and arith, through the generics that compute it) and of a key mask
// [B, T], and evaluated at every (query, key) with the key mask's element
// true and false: the keys seen must be exactly the causal ones (or every
// key) where the key mask is true, and none where it is false.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "ga/Utils/LinalgMatchers.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace ga::attention;
using ga::dimsAre;
using ga::floatConstant;
using ga::hasShape;
using ga::isArg;
using ga::producer;
using ga::yieldedValue;

namespace {

/// What a loop of a mask's generic, or a dimension of a tensor it reads,
/// stands for.
enum class Role { Unit, Batch, Query, Key, Other };

/// An integer function of a position (i, j) and of `seen`, the key mask's
/// element at (b, j) where it reads one: what linalg.index, integer
/// constants and arith compute, through the generics that feed each other.
/// Nodes are in post-order.
struct IndexFunction {
  enum Kind { Const, I, J, Seen, Add, Sub, Cmp, Xor, And, Or, Select };
  struct Node {
    Kind kind;
    int64_t value = 0;
    arith::CmpIPredicate pred = arith::CmpIPredicate::eq;
    int a = -1, b = -1, c = -1;
  };
  SmallVector<Node> nodes;
  /// The [B, T] i1 tensor that the Seen nodes read.
  Value keyMask;

  int add(Node n) {
    nodes.push_back(n);
    return static_cast<int>(nodes.size()) - 1;
  }

  /// The value of node `root` (booleans are 0 and 1).
  int64_t eval(int root, int64_t i, int64_t j, int64_t seen,
               SmallVectorImpl<int64_t> &vals) const {
    vals.resize(nodes.size());
    for (auto [n, node] : llvm::enumerate(nodes)) {
      int64_t x = node.a >= 0 ? vals[node.a] : 0;
      int64_t y = node.b >= 0 ? vals[node.b] : 0;
      switch (node.kind) {
      case Const:
        vals[n] = node.value;
        break;
      case I:
        vals[n] = i;
        break;
      case J:
        vals[n] = j;
        break;
      case Seen:
        vals[n] = seen;
        break;
      case Add:
        vals[n] = x + y;
        break;
      case Sub:
        vals[n] = x - y;
        break;
      case Xor:
        vals[n] = x ^ y;
        break;
      case And:
        vals[n] = x & y;
        break;
      case Or:
        vals[n] = x | y;
        break;
      case Select:
        vals[n] = x ? y : vals[node.c];
        break;
      case Cmp:
        vals[n] = arith::applyCmpPredicate(node.pred, APInt(64, x, true),
                                           APInt(64, y, true));
        break;
      }
      if (n == static_cast<size_t>(root))
        break;
    }
    return vals[root];
  }
};

/// The tensor that input argument `v` of `g` reads and the roles of its
/// dimensions (a dimension of size 1 is a unit); none for another argument
/// or a map that is not a projection.
std::optional<std::pair<Value, SmallVector<Role>>>
inputRoles(Value v, linalg::GenericOp g, ArrayRef<Role> roles) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != g.getBody() ||
      arg.getArgNumber() >= static_cast<unsigned>(g.getNumDpsInputs()))
    return std::nullopt;
  OpOperand *operand = g.getDpsInputOperand(arg.getArgNumber());
  auto type = dyn_cast<RankedTensorType>(operand->get().getType());
  if (!type)
    return std::nullopt;
  AffineMap map = g.getMatchingIndexingMap(operand);
  SmallVector<Role> dims;
  for (auto [size, e] : llvm::zip(type.getShape(), map.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (size == 1)
      dims.push_back(Role::Unit);
    else if (dim)
      dims.push_back(roles[dim.getPosition()]);
    else
      return std::nullopt;
  }
  return std::make_pair(operand->get(), dims);
}

/// The generic that computes `tensor`, whose loops then stand for the
/// roles of its output's dimensions (an identity map), or null.
linalg::GenericOp rolesOfProducer(Value tensor, ArrayRef<Role> dims) {
  linalg::GenericOp p = producer(tensor);
  if (!p || p.getNumDpsInits() != 1 || p->getNumResults() != 1 ||
      p.getNumLoops() != dims.size())
    return nullptr;
  SmallVector<unsigned> identity =
      llvm::to_vector(llvm::seq<unsigned>(0, dims.size()));
  return dimsAre(p.getIndexingMapsArray().back(), identity) ? p : nullptr;
}

/// The roles of a collapse_shape's source dimensions: each group holds at
/// most one dimension larger than 1, which takes the group's role.
std::optional<SmallVector<Role>> collapsedRoles(tensor::CollapseShapeOp c,
                                                ArrayRef<Role> dims) {
  ArrayRef<int64_t> shape = c.getSrcType().getShape();
  SmallVector<Role> source(shape.size(), Role::Unit);
  for (auto [group, role] : llvm::zip(c.getReassociationIndices(), dims)) {
    unsigned large = 0;
    for (int64_t d : group)
      if (shape[d] != 1) {
        source[d] = role;
        ++large;
      }
    if (large > 1)
      return std::nullopt;
  }
  return source;
}

int traceIndex(Value v, linalg::GenericOp g, ArrayRef<Role> roles,
               IndexFunction &f, unsigned depth = 0);

int64_t constantValue(const APInt &value) {
  return value.getBitWidth() == 1 ? static_cast<int64_t>(value.getZExtValue())
                                  : value.getSExtValue();
}

/// Traces `tensor`, read at dimensions standing for `dims`: a splat
/// constant, the generic that computes it, a collapse_shape of unit
/// dimensions, or else, for an i1 tensor [B, T] read at (b, j), the key
/// mask.
int traceTensor(Value tensor, ArrayRef<Role> dims, IndexFunction &f,
                unsigned depth) {
  DenseIntElementsAttr splat;
  if (matchPattern(tensor, m_Constant(&splat)) && splat.isSplat())
    return f.add(
        {IndexFunction::Const, constantValue(splat.getSplatValue<APInt>())});
  Value keyMask = f.keyMask;
  if (linalg::GenericOp p = rolesOfProducer(tensor, dims)) {
    int node = traceIndex(yieldedValue(p), p, dims, f, depth + 1);
    if (node >= 0)
      return node;
  } else if (auto c = tensor.getDefiningOp<tensor::CollapseShapeOp>()) {
    if (std::optional<SmallVector<Role>> source = collapsedRoles(c, dims)) {
      int node = traceTensor(c.getSrc(), *source, f, depth + 1);
      if (node >= 0)
        return node;
    }
  }
  f.keyMask = keyMask;
  auto type = cast<RankedTensorType>(tensor.getType());
  // (A batch of one example reads its only row as a unit.)
  if (!type.getElementType().isInteger(1) || dims.size() != 2 ||
      (dims[0] != Role::Batch && dims[0] != Role::Unit) ||
      dims[1] != Role::Key || (f.keyMask && f.keyMask != tensor))
    return -1;
  f.keyMask = tensor;
  return f.add({IndexFunction::Seen});
}

/// Traces `v`, an integer in the body of `g` whose loops stand for
/// `roles`, into `f`: the node, or -1 where it depends on anything but the
/// position, constants and a key mask.
int traceIndex(Value v, linalg::GenericOp g, ArrayRef<Role> roles,
               IndexFunction &f, unsigned depth) {
  using F = IndexFunction;
  if (depth > 64 || !v.getType().isIntOrIndex())
    return -1;
  if (isa<BlockArgument>(v)) {
    auto input = inputRoles(v, g, roles);
    return input ? traceTensor(input->first, input->second, f, depth + 1) : -1;
  }
  IntegerAttr constant;
  if (matchPattern(v, m_Constant(&constant)))
    return f.add({F::Const, constantValue(constant.getValue())});
  Operation *op = v.getDefiningOp();
  if (auto index = dyn_cast<linalg::IndexOp>(op)) {
    if (index->getParentOp() != g.getOperation())
      return -1;
    switch (roles[index.getDim()]) {
    case Role::Query:
      return f.add({F::I});
    case Role::Key:
      return f.add({F::J});
    case Role::Unit:
      return f.add({F::Const, 0});
    default:
      return -1;
    }
  }
  // Casts that keep the value (a boolean stays 0 or 1).
  if (isa<arith::IndexCastOp, arith::ExtUIOp>(op) ||
      (isa<arith::ExtSIOp>(op) &&
       op->getOperand(0).getType().getIntOrFloatBitWidth() > 1))
    return traceIndex(op->getOperand(0), g, roles, f, depth + 1);
  F::Node node{F::Const};
  if (isa<arith::AddIOp>(op))
    node.kind = F::Add;
  else if (isa<arith::SubIOp>(op))
    node.kind = F::Sub;
  else if (isa<arith::XOrIOp>(op))
    node.kind = F::Xor;
  else if (isa<arith::AndIOp>(op))
    node.kind = F::And;
  else if (isa<arith::OrIOp>(op))
    node.kind = F::Or;
  else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    node.kind = F::Cmp;
    node.pred = cmp.getPredicate();
  } else if (isa<arith::SelectOp>(op)) {
    node.kind = F::Select;
  } else {
    return -1;
  }
  // Two operands (select: three), each traced.
  int *args[] = {&node.a, &node.b, &node.c};
  for (auto [operand, arg] : llvm::zip(op->getOperands(), args)) {
    *arg = traceIndex(operand, g, roles, f, depth + 1);
    if (*arg < 0)
      return -1;
  }
  return f.add(node);
}

/// A float mask: select(cond, ifTrue, ifFalse) of constants, in `g` or in
/// the generics (and unit collapses) that compute an input of it.
struct FloatMask {
  IndexFunction cond;
  int root = -1;
  double ifTrue = 0, ifFalse = 0;
};

std::optional<FloatMask> traceFloatMask(Value v, linalg::GenericOp g,
                                        ArrayRef<Role> roles,
                                        unsigned depth = 0) {
  if (depth > 8)
    return std::nullopt;
  if (isa<BlockArgument>(v)) {
    auto input = inputRoles(v, g, roles);
    if (!input)
      return std::nullopt;
    auto [tensor, dims] = *input;
    while (auto c = tensor.getDefiningOp<tensor::CollapseShapeOp>()) {
      std::optional<SmallVector<Role>> source = collapsedRoles(c, dims);
      if (!source)
        return std::nullopt;
      tensor = c.getSrc();
      dims = *source;
    }
    linalg::GenericOp p = rolesOfProducer(tensor, dims);
    if (!p)
      return std::nullopt;
    return traceFloatMask(yieldedValue(p), p, dims, depth + 1);
  }
  auto select = v.getDefiningOp<arith::SelectOp>();
  if (!select)
    return std::nullopt;
  std::optional<double> t = floatConstant(select.getTrueValue());
  std::optional<double> e = floatConstant(select.getFalseValue());
  if (!t || !e)
    return std::nullopt;
  FloatMask m;
  m.ifTrue = *t;
  m.ifFalse = *e;
  m.root = traceIndex(select.getCondition(), g, roles, m.cond);
  if (m.root < 0)
    return std::nullopt;
  return m;
}

/// Whether `seen(i, j, k)` shows exactly the keys of a causal mask (or,
/// with `causal` false, every key) where the key mask's element k is true,
/// and, with a key mask, none where it is false.
bool showsExactly(bool causal, bool keyMask, int64_t queries, int64_t keys,
                  function_ref<bool(int64_t, int64_t, int64_t)> seen) {
  if (causal && queries != keys)
    return false;
  for (int64_t i = 0; i < queries; ++i)
    for (int64_t j = 0; j < keys; ++j)
      if (seen(i, j, 1) != (!causal || j <= i) || (keyMask && seen(i, j, 0)))
        return false;
  return true;
}

} // namespace

/// A mask on the scores [B, H, S, T]: select(hidden, c, s) or select(seen,
/// s, c) (c then the masked score), or s + m with m 0 where seen and at
/// most -1e30 where hidden (then s + m rounds to m, the masked score). The
/// condition, or m, is traced to a function of the position (linalg.index,
/// or tensors that generics compute from it) and of a key mask [B, T] (an
/// i1 tensor read at (b, j)), and evaluated at every position with the key
/// mask's element true and false: the keys seen must be exactly j <= i
/// (causal) where the key mask is true, or, without the causal part, every
/// key where it is true; none where it is false.
std::optional<Mask> ga::attention::matchMask(linalg::GenericOp g) {
  if (!hasShape(g, g.getNumDpsInputs(), 0) || g.getNumLoops() != 4 ||
      g.getNumDpsInputs() < 1 || g.getNumDpsInputs() > 2 ||
      !dimsAre(g.getIndexingMapsArray().back(), {0, 1, 2, 3}))
    return std::nullopt;
  // The scores: the one input read at [b, h, i, j].
  std::optional<unsigned> scores;
  for (OpOperand *input : g.getDpsInputOperands()) {
    if (!dimsAre(g.getMatchingIndexingMap(input), {0, 1, 2, 3}))
      continue;
    if (scores)
      return std::nullopt;
    scores = input->getOperandNumber();
  }
  if (!scores)
    return std::nullopt;
  auto shape = cast<ShapedType>(g->getResult(0).getType()).getShape();
  const Role roles[] = {Role::Batch, Role::Other, Role::Query, Role::Key};
  IndexFunction cond;
  int root = -1;
  // Whether a key is seen where the condition is true.
  bool seenWhenTrue = false;
  double masked = 0;
  Value y = yieldedValue(g);
  if (auto select = y.getDefiningOp<arith::SelectOp>()) {
    bool hiddenWhenTrue = isArg(select.getFalseValue(), g, *scores);
    if (!hiddenWhenTrue && !isArg(select.getTrueValue(), g, *scores))
      return std::nullopt;
    std::optional<double> c = floatConstant(
        hiddenWhenTrue ? select.getTrueValue() : select.getFalseValue());
    if (!c)
      return std::nullopt;
    masked = *c;
    seenWhenTrue = !hiddenWhenTrue;
    root = traceIndex(select.getCondition(), g, roles, cond);
  } else if (auto add = y.getDefiningOp<arith::AddFOp>()) {
    Value other = isArg(add.getLhs(), g, *scores)   ? add.getRhs()
                  : isArg(add.getRhs(), g, *scores) ? add.getLhs()
                                                    : Value();
    std::optional<FloatMask> m =
        other ? traceFloatMask(other, g, roles) : std::nullopt;
    if (!m)
      return std::nullopt;
    // The seen keys add exactly zero; the hidden ones a value that every
    // finite score rounds to.
    seenWhenTrue = m->ifTrue == 0.0;
    masked = seenWhenTrue ? m->ifFalse : m->ifTrue;
    if ((seenWhenTrue ? m->ifTrue : m->ifFalse) != 0.0 || !(masked <= -1e30))
      return std::nullopt;
    cond = std::move(m->cond);
    root = m->root;
  }
  if (root < 0)
    return std::nullopt;
  SmallVector<int64_t> vals;
  auto seen = [&](int64_t i, int64_t j, int64_t k) {
    return (cond.eval(root, i, j, k, vals) != 0) == seenWhenTrue;
  };
  bool keyMask = static_cast<bool>(cond.keyMask);
  for (bool causal : {true, false}) {
    if (!causal && !keyMask)
      continue;
    if (!showsExactly(causal, keyMask, shape[2], shape[3], seen))
      continue;
    // The key mask is the op's operand: [B, T], not broadcast over B.
    if (keyMask && cast<ShapedType>(cond.keyMask.getType()).getShape() !=
                       ArrayRef<int64_t>{shape[0], shape[3]})
      return std::nullopt;
    return Mask{g.getDpsInputs()[*scores], masked, causal, cond.keyMask};
  }
  return std::nullopt;
}
