//===- RaiseAttention.cpp - Attention written in linalg to train.attention ===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// Attention written as seven linalg.generic operations (scores, mask,
// row maximum, exponentials, their sum, the division, the contraction with
// the values) holds [B, H, S, T] tensors, and its gradient saves the
// probabilities for the backward pass. As one train.attention, the lowering
// computes it over key tiles (online softmax) and the gradient recomputes
// the probabilities tile by tile from the row's log-sum-exp.
//
// Two forms: the generator's seven generics, and the importer's (PyTorch
// through ga-import and ga-legalize-import), with transposes and batch
// matmuls over [B * H, ...]. The match is structural: each generic's
// indexing maps (in whatever loop order), iterator kinds and body, and each
// intermediate used only by the next step of the chain. A causal mask is
// checked by value: its condition is traced to a function of the position
// and evaluated at every (query, key).
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"
#include "ga/Utils/LinalgMatchers.h"
#include "ga/Utils/TensorBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINRAISEATTENTIONPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using ga::combinesInputAndOutput;
using ga::fillValue;
using ga::floatConstant;
using ga::hasUsers;
using ga::isArg;
using ga::producer;
using ga::yieldedOp;

namespace {

/// The first value a generic yields (its only one, where it has one
/// result).
Value yieldedValue(linalg::GenericOp g) {
  return cast<linalg::YieldOp>(g.getBody()->getTerminator()).getOperand(0);
}

/// c where `v` is mulf(input 0 of `g`, c) or mulf(c, input 0), c a float
/// constant.
std::optional<double> constantFactor(Value v, linalg::GenericOp g) {
  auto mul = v.getDefiningOp<arith::MulFOp>();
  if (mul && isArg(mul.getLhs(), g, 0))
    return floatConstant(mul.getRhs());
  if (mul && isArg(mul.getRhs(), g, 0))
    return floatConstant(mul.getLhs());
  return std::nullopt;
}

/// The loop dimensions of `map`'s results, when each is a plain dimension.
std::optional<SmallVector<unsigned>> dimsOf(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (!dim)
      return std::nullopt;
    dims.push_back(dim.getPosition());
  }
  return dims;
}

bool dimsAre(AffineMap map, ArrayRef<unsigned> dims) {
  std::optional<SmallVector<unsigned>> got = dimsOf(map);
  return got && ArrayRef<unsigned>(*got) == dims;
}

bool hasShape(linalg::GenericOp g, unsigned inputs, unsigned reductions) {
  return g.getNumDpsInputs() == inputs && g.getNumDpsInits() == 1 &&
         g->getNumResults() == 1 && g.getNumReductionLoops() == reductions;
}

/// sum over one reduction loop of in0 * in1 (each product optionally times
/// a constant), into a fill of zero. Returns the constant (1 without one)
/// and the reduction loop.
struct Contraction {
  double scale = 1.0;
  unsigned reduction = 0;
};

std::optional<Contraction> matchContraction(linalg::GenericOp g) {
  if (!hasShape(g, 2, 1) || fillValue(g.getDpsInits()[0]) != 0.0)
    return std::nullopt;
  auto add = dyn_cast_or_null<arith::AddFOp>(yieldedOp(g));
  if (!add)
    return std::nullopt;
  Value term;
  if (isArg(add.getLhs(), g, 2))
    term = add.getRhs();
  else if (isArg(add.getRhs(), g, 2))
    term = add.getLhs();
  else
    return std::nullopt;
  auto isProduct = [&](arith::MulFOp m) {
    return m && ((isArg(m.getLhs(), g, 0) && isArg(m.getRhs(), g, 1)) ||
                 (isArg(m.getLhs(), g, 1) && isArg(m.getRhs(), g, 0)));
  };
  Contraction c;
  auto mul = term.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return std::nullopt;
  if (!isProduct(mul)) {
    std::optional<double> factor;
    arith::MulFOp inner;
    if ((factor = floatConstant(mul.getRhs())))
      inner = mul.getLhs().getDefiningOp<arith::MulFOp>();
    else if ((factor = floatConstant(mul.getLhs())))
      inner = mul.getRhs().getDefiningOp<arith::MulFOp>();
    if (!factor || !isProduct(inner))
      return std::nullopt;
    c.scale = *factor;
  }
  for (auto [i, kind] : llvm::enumerate(g.getIteratorTypesArray()))
    if (kind == utils::IteratorType::reduction)
      c.reduction = i;
  return c;
}

/// A generic over [B, H, S, T] whose maps are the identity (and, for a
/// second input, the row [B, H, S]).
bool isRowwise(linalg::GenericOp g, unsigned inputs) {
  if (!hasShape(g, inputs, 0) || g.getNumLoops() != 4)
    return false;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  for (auto [i, map] : llvm::enumerate(maps)) {
    bool row = inputs == 2 && i == 1;
    if (!dimsAre(map, row ? ArrayRef<unsigned>{0, 1, 2}
                          : ArrayRef<unsigned>{0, 1, 2, 3}))
      return false;
  }
  return true;
}

/// A reduction of [B, H, S, T] over its last loop into [B, H, S].
bool isRowReduction(linalg::GenericOp g) {
  if (!hasShape(g, 1, 1) || g.getNumLoops() != 4 ||
      g.getIteratorTypesArray()[3] != utils::IteratorType::reduction)
    return false;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  return dimsAre(maps[0], {0, 1, 2, 3}) && dimsAre(maps[1], {0, 1, 2});
}

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

/// A mask on the scores [B, H, S, T]: select(hidden, c, s) or select(seen,
/// s, c) (c then the masked score), or s + m with m 0 where seen and at
/// most -1e30 where hidden (then s + m rounds to m, the masked score). The
/// condition, or m, is traced to a function of the position (linalg.index,
/// or tensors that generics compute from it) and of a key mask [B, T] (an
/// i1 tensor read at (b, j)), and evaluated at every position with the key
/// mask's element true and false: the keys seen must be exactly j <= i
/// (causal) where the key mask is true, or, without the causal part, every
/// key where it is true; none where it is false.
struct Mask {
  Value scores;
  double masked;
  bool causal;
  Value keyMask;
};

std::optional<Mask> matchMask(linalg::GenericOp g) {
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

/// An operand of train.attention ([B, X, H, Y]) as the importer's matmuls
/// read it: `source` in that layout already (through a view, maybe times a
/// constant), head-major [B, H, X, Y] (transposed when raised: the queries
/// after rotary embeddings), or grouped [B, G, R, X, Y] (keys and values
/// of grouped-query attention, each repeated for R heads: collapsed to the
/// G R heads, then transposed).
struct HeadOperand {
  enum Layout { PositionMajor, HeadMajor, Grouped };
  Layout layout = PositionMajor;
  Value source;
  double scale = 1.0;
};

/// One attention: the op whose result the attention's output replaces,
/// and what train.attention takes.
struct Chain {
  Operation *last = nullptr;
  double scale = 1.0;
  std::optional<double> maskedScore;
  bool causal = false;
  HeadOperand query, key, value;
  Value keyMask;
  /// The scores the softmax reads (after the mask).
  Value maskedScores;
};

/// probs = exp(s - max_j s) / sum_j exp(s - max_j s) over the last loop of
/// [B, H, S, T], used only by `user`: sets c.maskedScores to s, which only
/// the softmax and `moreReaders` read. The subtraction is in the
/// exponential's generic or a generic of its own.
bool matchSoftmax(Value probsValue, Operation *user, Chain &c,
                  ArrayRef<Operation *> moreReaders = {}) {
  linalg::GenericOp probs = producer(probsValue);
  if (!probs || probs.getNumLoops() != 4 || !hasUsers(probsValue, {user}))
    return false;
  std::optional<ga::SoftmaxChain> softmax = ga::matchSoftmax(probs);
  if (!softmax)
    return false;
  SmallVector<Operation *> readers{softmax->rowMax, softmax->difference};
  readers.append(moreReaders.begin(), moreReaders.end());
  if (!hasUsers(softmax->scores, readers))
    return false;
  c.maskedScores = softmax->scores;
  return true;
}

/// An optional mask on `scores`: steps over it (the scores must then have
/// no other reader) and sets what the attention takes of it.
bool unmask(Value &scores, Chain &c) {
  linalg::GenericOp g = producer(scores);
  std::optional<Mask> mask = g ? matchMask(g) : std::nullopt;
  if (!mask)
    return true;
  c.maskedScore = mask->masked;
  c.causal = mask->causal;
  c.keyMask = mask->keyMask;
  scores = mask->scores;
  return scores.hasOneUse();
}

/// The chain's query, key, value and output of one float type.
std::optional<Chain> oneFloatType(Chain &c) {
  Type element = cast<ShapedType>(c.query.source.getType()).getElementType();
  for (Value v : {c.key.source, c.value.source, Value(c.last->getResult(0))})
    if (cast<ShapedType>(v.getType()).getElementType() != element)
      return std::nullopt;
  return c;
}

/// The generator's form (examples/gen_tiny_gpt.py): generics throughout,
/// the queries, keys and values read in place as [B, S, H, D].
std::optional<Chain> matchChain(linalg::GenericOp context) {
  Chain c;
  c.last = context;
  std::optional<Contraction> ctx = matchContraction(context);
  if (!ctx || ctx->scale != 1.0 || context.getNumLoops() != 5)
    return std::nullopt;
  // out[b, i, h, e] = sum_j probs[b, h, i, j] * value[b, j, h, e].
  SmallVector<AffineMap> maps = context.getIndexingMapsArray();
  std::optional<SmallVector<unsigned>> o = dimsOf(maps[2]);
  unsigned r = ctx->reduction;
  if (!o || o->size() != 4 ||
      !dimsAre(maps[0], {(*o)[0], (*o)[2], (*o)[1], r}) ||
      !dimsAre(maps[1], {(*o)[0], r, (*o)[2], (*o)[3]}))
    return std::nullopt;
  c.value.source = context.getDpsInputs()[1];

  if (!matchSoftmax(context.getDpsInputs()[0], context, c))
    return std::nullopt;
  Value scores = c.maskedScores;
  if (!unmask(scores, c))
    return std::nullopt;
  // scores[b, h, i, j] = sum_d query[b, i, h, d] * key[b, j, h, d] * scale.
  linalg::GenericOp product = producer(scores);
  if (!product || product.getNumLoops() != 5)
    return std::nullopt;
  std::optional<Contraction> s = matchContraction(product);
  if (!s)
    return std::nullopt;
  maps = product.getIndexingMapsArray();
  std::optional<SmallVector<unsigned>> so = dimsOf(maps[2]);
  r = s->reduction;
  if (!so || so->size() != 4 ||
      !dimsAre(maps[0], {(*so)[0], (*so)[2], (*so)[1], r}) ||
      !dimsAre(maps[1], {(*so)[0], (*so)[3], (*so)[1], r}))
    return std::nullopt;
  c.scale = s->scale;
  c.query.source = product.getDpsInputs()[0];
  c.key.source = product.getDpsInputs()[1];
  return oneFloatType(c);
}

/// The [B, H, X, Y] view of a [B, X, H, Y] tensor (permutation [0, 2, 1,
/// 3]), or its [B, H, Y, X] view ([0, 2, 3, 1]), maybe times a constant:
/// linalg.transpose, or a generic that reads the permuted input.
struct HeadView {
  Value source;
  double scale = 1.0;
};

std::optional<HeadView> matchHeadView(Value v, ArrayRef<int64_t> perm) {
  if (auto t = v.getDefiningOp<linalg::TransposeOp>()) {
    if (t.getPermutation() != perm)
      return std::nullopt;
    return HeadView{t.getInput()};
  }
  linalg::GenericOp g = producer(v);
  if (!g || !hasShape(g, 1, 0) || g.getNumLoops() != 4)
    return std::nullopt;
  // Loop i is the input's dimension perm[i].
  SmallVector<unsigned> inputDims(4);
  for (unsigned i = 0; i < 4; ++i)
    inputDims[perm[i]] = i;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  if (!dimsAre(maps[0], inputDims) || !dimsAre(maps[1], {0, 1, 2, 3}))
    return std::nullopt;
  Value y = yieldedValue(g);
  HeadView view{g.getDpsInputs()[0]};
  if (isArg(y, g, 0))
    return view;
  std::optional<double> factor = constantFactor(y, g);
  if (!factor)
    return std::nullopt;
  view.scale = *factor;
  return view;
}

bool isHeadsReassociation(ArrayRef<ReassociationIndices> r) {
  return r.size() == 3 && r[0] == ReassociationIndices{0, 1} &&
         r[1] == ReassociationIndices{2} && r[2] == ReassociationIndices{3};
}

/// A batch matmul over the heads: expand_shape([B * H, X, Z] -> [B, H, X,
/// Z]) of linalg.batch_matmul(lhs, rhs) from zero, lhs [B * H, X, Y] and
/// rhs [B * H, Y, Z]. Its result is read only by the expansion.
struct HeadProduct {
  Value lhs, rhs;
  int64_t batch, heads;
  linalg::BatchMatmulOp matmul;
};

std::optional<HeadProduct> matchHeadProduct(Value v) {
  auto expand = v.getDefiningOp<tensor::ExpandShapeOp>();
  if (!expand || expand.getResultType().getRank() != 4 ||
      !isHeadsReassociation(expand.getReassociationIndices()))
    return std::nullopt;
  auto matmul = expand.getSrc().getDefiningOp<linalg::BatchMatmulOp>();
  if (!matmul || !expand.getSrc().hasOneUse() ||
      matmul.getIndexingMapsArray() !=
          linalg::BatchMatmulOp::getDefaultIndexingMaps(matmul.getContext()) ||
      fillValue(matmul.getDpsInits()[0]) != 0.0)
    return std::nullopt;
  ArrayRef<int64_t> shape = expand.getResultType().getShape();
  HeadProduct p{matmul.getDpsInputs()[0], matmul.getDpsInputs()[1], shape[0],
                shape[1], matmul};
  Type element = expand.getResultType().getElementType();
  for (Value x : {p.lhs, p.rhs})
    if (cast<ShapedType>(x.getType()).getElementType() != element)
      return std::nullopt;
  return p;
}

/// The [B, H, X, Y] tensor that `v` [B * H, X, Y] collapses, or null.
Value uncollapsedHeads(Value v, int64_t batch, int64_t heads) {
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || collapse.getSrcType().getRank() != 4 ||
      !isHeadsReassociation(collapse.getReassociationIndices()) ||
      collapse.getSrcType().getShape().take_front(2) !=
          ArrayRef<int64_t>{batch, heads})
    return {};
  return collapse.getSrc();
}

/// select(all_j s == -inf, 0, p): PyTorch's scaled_dot_product_attention
/// gives rows without a visible key zeros instead of NaN. With a causal
/// mask every row sees its own key, whose score is finite for finite
/// queries and keys, so that the guard never selects.
struct NoKeyGuard {
  linalg::GenericOp select, compare;
  Value probs, scores;
};

std::optional<NoKeyGuard> matchNoKeyGuard(Value v) {
  linalg::GenericOp g = producer(v);
  if (!g || !hasShape(g, 2, 0) || g.getNumLoops() != 4)
    return std::nullopt;
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  if (!dimsAre(maps[0], {0, 1, 2}) || !dimsAre(maps[1], {0, 1, 2, 3}) ||
      !dimsAre(maps[2], {0, 1, 2, 3}))
    return std::nullopt;
  auto select = dyn_cast_or_null<arith::SelectOp>(yieldedOp(g));
  if (!select || !isArg(select.getCondition(), g, 0) ||
      floatConstant(select.getTrueValue()) != 0.0 ||
      !isArg(select.getFalseValue(), g, 1))
    return std::nullopt;
  // all_j: a reduction with `and` from true.
  linalg::GenericOp all = producer(g.getDpsInputs()[0]);
  auto fill =
      all ? all.getDpsInits()[0].getDefiningOp<linalg::FillOp>() : nullptr;
  if (!all || !isRowReduction(all) || !fill ||
      !matchPattern(fill.getInputs()[0], m_One()) ||
      !combinesInputAndOutput<arith::AndIOp>(all) ||
      !hasUsers(all->getResult(0), {g}))
    return std::nullopt;
  // s == -inf, perhaps in a wider type.
  linalg::GenericOp compare = producer(all.getDpsInputs()[0]);
  if (!compare || !isRowwise(compare, 1) ||
      !hasUsers(compare->getResult(0), {all}))
    return std::nullopt;
  auto cmp = dyn_cast_or_null<arith::CmpFOp>(yieldedOp(compare));
  if (!cmp || cmp.getPredicate() != arith::CmpFPredicate::OEQ)
    return std::nullopt;
  Value score = cmp.getLhs();
  std::optional<double> bound = floatConstant(cmp.getRhs());
  if (auto ext = score.getDefiningOp<arith::ExtFOp>())
    score = ext.getIn();
  if (!isArg(score, compare, 0) || !bound ||
      *bound != -std::numeric_limits<double>::infinity())
    return std::nullopt;
  return NoKeyGuard{g, compare, g.getDpsInputs()[1], compare.getDpsInputs()[0]};
}

/// `v`, an operand [B * H, X, Y] of a heads' matmul (with `keys`, [B * H, Y,
/// X]: the keys transposed for the scores).
std::optional<HeadOperand> matchHeadOperand(Value v, int64_t batch,
                                            int64_t heads, bool keys) {
  if (Value t = uncollapsedHeads(v, batch, heads)) {
    if (std::optional<HeadView> view =
            matchHeadView(t, keys ? ArrayRef<int64_t>{0, 2, 3, 1}
                                  : ArrayRef<int64_t>{0, 2, 1, 3}))
      return HeadOperand{HeadOperand::PositionMajor, view->source, view->scale};
    if (!keys)
      return HeadOperand{HeadOperand::HeadMajor, t};
    // [B, H, Y, X]: the head-major keys [B, H, X, Y] transposed.
    auto transpose = t.getDefiningOp<linalg::TransposeOp>();
    if (!transpose ||
        transpose.getPermutation() != ArrayRef<int64_t>{0, 1, 3, 2})
      return std::nullopt;
    return HeadOperand{HeadOperand::HeadMajor, transpose.getInput()};
  }
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (keys || !collapse || collapse.getSrcType().getRank() != 5)
    return std::nullopt;
  ArrayRef<int64_t> shape = collapse.getSrcType().getShape();
  SmallVector<ReassociationIndices> r = collapse.getReassociationIndices();
  if (r.size() != 3 || r[0] != ReassociationIndices{0, 1, 2} ||
      shape[0] != batch || shape[1] * shape[2] != heads)
    return std::nullopt;
  return HeadOperand{HeadOperand::Grouped, collapse.getSrc()};
}

/// The importer's form (PyTorch's attention through torch-mlir and
/// ga-legalize-import): the heads moved before the positions (transposes,
/// each maybe scaled), batch matmuls over [B * H, ...], the scores maybe
/// scaled, a causal mask (a boolean or additive tensor over [S, T]), the
/// softmax with the subtraction in a generic of its own, perhaps
/// scaled_dot_product_attention's guard, and the output moved back to [B,
/// S, H, E].
std::optional<Chain> matchImportChain(linalg::BatchMatmulOp context) {
  Chain c;
  if (!context->getResult(0).hasOneUse())
    return std::nullopt;
  auto expand =
      dyn_cast<tensor::ExpandShapeOp>(*context->getResult(0).user_begin());
  std::optional<HeadProduct> pv =
      expand ? matchHeadProduct(expand.getResult()) : std::nullopt;
  if (!pv || !expand->hasOneUse())
    return std::nullopt;
  // out[b, i, h, e]: the product moved back.
  c.last = *expand->user_begin();
  if (c.last->getNumResults() != 1)
    return std::nullopt;
  std::optional<HeadView> back =
      matchHeadView(c.last->getResult(0), {0, 2, 1, 3});
  std::optional<HeadOperand> value =
      matchHeadOperand(pv->rhs, pv->batch, pv->heads, /*keys=*/false);
  if (!back || back->source != expand.getResult() || back->scale != 1.0 ||
      !value || value->scale != 1.0)
    return std::nullopt;
  c.value = *value;
  // The probabilities, perhaps behind the guard.
  Value probs = uncollapsedHeads(pv->lhs, pv->batch, pv->heads);
  Operation *probsUser = pv->lhs.getDefiningOp();
  if (!probs)
    return std::nullopt;
  std::optional<NoKeyGuard> guard = matchNoKeyGuard(probs);
  SmallVector<Operation *> guardReaders;
  if (guard) {
    if (!hasUsers(probs, {probsUser}))
      return std::nullopt;
    probsUser = guard->select;
    probs = guard->probs;
    guardReaders.push_back(guard->compare);
  }
  if (!matchSoftmax(probs, probsUser, c, guardReaders) ||
      (guard && guard->scores != c.maskedScores))
    return std::nullopt;
  Value scores = c.maskedScores;
  // The guard is dropped only where every row sees a key: its own.
  if (!unmask(scores, c) || (guard && (!c.causal || c.keyMask)))
    return std::nullopt;
  // An optional scale of the scores.
  if (linalg::GenericOp g = producer(scores); g && isRowwise(g, 1)) {
    if (std::optional<double> factor = constantFactor(yieldedValue(g), g)) {
      c.scale = *factor;
      scores = g.getDpsInputs()[0];
      if (!scores.hasOneUse())
        return std::nullopt;
    }
  }
  std::optional<HeadProduct> qk = matchHeadProduct(scores);
  if (!qk)
    return std::nullopt;
  std::optional<HeadOperand> query =
      matchHeadOperand(qk->lhs, qk->batch, qk->heads, /*keys=*/false);
  std::optional<HeadOperand> key =
      matchHeadOperand(qk->rhs, qk->batch, qk->heads, /*keys=*/true);
  if (!query || !key)
    return std::nullopt;
  c.query = *query;
  c.key = *key;
  c.scale *= query->scale * key->scale;
  return oneFloatType(c);
}

int64_t largestDivisorAtMost(int64_t n, int64_t bound) {
  for (int64_t t = std::min(n, bound); t > 1; --t)
    if (n % t == 0)
      return t;
  return 1;
}

struct TrainRaiseAttentionPass
    : ga::impl::TrainRaiseAttentionPassBase<TrainRaiseAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    if (keyTile < 1) {
      getOperation()->emitError()
          << "train-raise-attention: key-tile must be positive, got "
          << keyTile.getValue();
      return signalPassFailure();
    }
    SmallVector<Chain> chains;
    getOperation()->walk([&](Operation *op) {
      std::optional<Chain> chain;
      if (auto g = dyn_cast<linalg::GenericOp>(op))
        chain = matchChain(g);
      else if (auto matmul = dyn_cast<linalg::BatchMatmulOp>(op))
        chain = matchImportChain(matmul);
      if (chain)
        chains.push_back(*chain);
    });
    for (Chain &c : chains)
      raise(c);
  }

  /// The operand in the layout train.attention takes, [B, X, H, Y].
  static Value materialize(OpBuilder &b, Location loc, const HeadOperand &o) {
    Value v = o.source;
    if (o.layout == HeadOperand::Grouped)
      v = tensor::CollapseShapeOp::create(
          b, loc, v, ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
    if (o.layout == HeadOperand::PositionMajor)
      return v;
    auto type = cast<RankedTensorType>(v.getType());
    ArrayRef<int64_t> shape = type.getShape();
    Value init = tensor::EmptyOp::create(
        b, loc, ArrayRef<int64_t>{shape[0], shape[2], shape[1], shape[3]},
        type.getElementType());
    return linalg::TransposeOp::create(b, loc, v, init,
                                       ArrayRef<int64_t>{0, 2, 1, 3})
        ->getResult(0);
  }

  void raise(Chain &c) {
    OpBuilder b(c.last);
    Location loc = c.last->getLoc();
    Value q = materialize(b, loc, c.query), k = materialize(b, loc, c.key),
          v = materialize(b, loc, c.value);
    auto query = cast<RankedTensorType>(q.getType());
    auto key = cast<RankedTensorType>(k.getType());
    auto lseType = RankedTensorType::get(
        {query.getDimSize(0), query.getDimSize(2), query.getDimSize(1)},
        query.getElementType());
    auto attention = ga::train::AttentionOp::create(
        b, loc, TypeRange{c.last->getResult(0).getType(), lseType}, q, k, v,
        c.keyMask, b.getF64FloatAttr(c.scale),
        c.causal ? b.getUnitAttr() : nullptr,
        b.getF64FloatAttr(c.maskedScore.value_or(-1.0e9)),
        b.getI64IntegerAttr(largestDivisorAtMost(key.getDimSize(1), keyTile)),
        b.getI64IntegerAttr(
            largestDivisorAtMost(query.getDimSize(1), keyTile)));
    c.last->getResult(0).replaceAllUsesWith(attention.getOut());
    // The chain, from the last, with its fills and empty tensors: each
    // intermediate had its successor for only user.
    ga::eraseWithDeadProducers(c.last);
  }
};

} // namespace
