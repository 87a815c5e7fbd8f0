//===- ChunkLossHead.cpp - The LM head and its loss in chunks of rows -----===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// A language model's loss reads [N, V] logits: N tokens, V words. With a
// large vocabulary they are the largest tensor of the step, and the
// differentiated step holds them (or their gradient, computed in their
// place) whole. The LM head, the cross-entropy and the products that read
// the logits' gradient (the hidden states' gradient, a parallel product
// over the rows, and the head's weight gradient, a reduction over them) are
// all row by row: computed over chunks of R rows in a loop, they never need
// more than [R, V] of logits, as fused linear cross-entropy kernels do.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"

#include "ga/Utils/TensorBuilders.h"
#include "train/TrainOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace ga {
#define GEN_PASS_DEF_GACHUNKLOSSHEADPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::train;

namespace {

/// How an operation of the chunked group uses the rows: the loop dimension
/// that walks them, and whether it is parallel (the result's rows) or a
/// reduction (the result is summed over the rows).
struct RowUse {
  unsigned dim;
  bool reduction;
};

/// The group that is computed chunk by chunk.
struct Group {
  /// The logits' producer (a row-parallel linalg operation).
  linalg::LinalgOp head;
  CrossEntropyOp loss;
  CrossEntropyGradOp grad;
  /// The linalg operations that read the logits' gradient, the operand
  /// through which each reads it, and how each walks its rows.
  SmallVector<linalg::LinalgOp> users;
  SmallVector<OpOperand *> userOperands;
  SmallVector<RowUse> userRows;
  RowUse headRows;
  /// collapse(expand(x)) round trips between the group's operations.
  SmallVector<Operation *> reshapes;
  int64_t rows = 0;
};

} // namespace

/// `v` without collapse_shape(expand_shape(x)) round trips that give back
/// x's type; the round-trip operations are added to `reshapes`.
static Value throughRoundTrips(Value v, SmallVectorImpl<Operation *> &trips) {
  while (auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>()) {
    auto expand = collapse.getSrc().getDefiningOp<tensor::ExpandShapeOp>();
    if (!expand || expand.getSrc().getType() != v.getType() ||
        expand.getReassociationIndices() !=
            collapse.getReassociationIndices() ||
        !expand->hasOneUse())
      break;
    trips.push_back(collapse);
    trips.push_back(expand);
    v = expand.getSrc();
  }
  return v;
}

/// The users of `v`, looking through round trips as throughRoundTrips does
/// (the round trips are added to `trips`); false when a user is a reshape
/// that is not such a round trip.
static bool usersThroughRoundTrips(Value v, SmallVectorImpl<Operation *> &out,
                                   SmallVectorImpl<Operation *> &trips) {
  for (Operation *user : v.getUsers()) {
    auto expand = dyn_cast<tensor::ExpandShapeOp>(user);
    if (!expand) {
      out.push_back(user);
      continue;
    }
    if (!expand->hasOneUse())
      return false;
    auto collapse = dyn_cast<tensor::CollapseShapeOp>(*expand->user_begin());
    if (!collapse || collapse.getType() != v.getType() ||
        collapse.getReassociationIndices() != expand.getReassociationIndices())
      return false;
    trips.push_back(expand);
    trips.push_back(collapse);
    if (!usersThroughRoundTrips(collapse.getResult(), out, trips))
      return false;
  }
  return true;
}

/// How `op` (one result, one init) walks dimension 0 of its operand
/// `rowsOperand`: the loop dimension must index only that dimension of that
/// operand, dimension 0 of every other operand that uses it (those are
/// sliced), and either dimension 0 of the result (parallel) or nothing of
/// it (a reduction whose init is then carried from chunk to chunk).
static FailureOr<RowUse> rowUse(linalg::LinalgOp op, OpOperand &rowsOperand,
                                std::string &why) {
  if (op->getNumResults() != 1 || op.getNumDpsInits() != 1 ||
      !op.hasPureTensorSemantics()) {
    why = "'" + op->getName().getStringRef().str() +
          "' is not a linalg operation on tensors with one result";
    return failure();
  }
  AffineMap map = op.getMatchingIndexingMap(&rowsOperand);
  auto dimExpr = dyn_cast<AffineDimExpr>(map.getResult(0));
  if (!dimExpr) {
    why = "'" + op->getName().getStringRef().str() +
          "' reads the rows through a non-trivial index";
    return failure();
  }
  unsigned d = dimExpr.getPosition();
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap m = op.getMatchingIndexingMap(&operand);
    for (auto [i, expr] : llvm::enumerate(m.getResults())) {
      if (!expr.isFunctionOfDim(d))
        continue;
      if (i != 0 || expr != dimExpr) {
        why = "'" + op->getName().getStringRef().str() +
              "' uses the rows' loop dimension beyond dimension 0 of its "
              "operands";
        return failure();
      }
    }
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type || !type.hasStaticShape()) {
      why = "an operand is not a tensor of static shape";
      return failure();
    }
  }
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  bool reduction = !out.getNumResults() || !out.getResult(0).isFunctionOfDim(d);
  if (reduction !=
      (op.getIteratorTypesArray()[d] == utils::IteratorType::reduction)) {
    why = "'" + op->getName().getStringRef().str() +
          "' neither maps the rows to its result's rows nor sums over them";
    return failure();
  }
  if (!reduction && !ga::isZeroTensor(op.getDpsInits()[0])) {
    why = "'" + op->getName().getStringRef().str() +
          "' computes the rows into an init that is not zero";
    return failure();
  }
  return RowUse{d, reduction};
}

/// The operations of `g` that read the logits' gradient, each on its rows
/// (g.users, g.userOperands, g.userRows); false, with `why`, where one does
/// not.
static bool matchGradientUsers(Group &g, std::string &why) {
  CrossEntropyGradOp grad = g.grad;
  SmallVector<Operation *> gradUsers;
  if (!usersThroughRoundTrips(grad.getResult(), gradUsers, g.reshapes)) {
    why = "the logits' gradient is reshaped";
    return false;
  }
  Value gradient = grad.getResult();
  // In program order: the loop's results follow it.
  llvm::sort(gradUsers, [](Operation *a, Operation *b) {
    return a->getBlock() == b->getBlock() && a->isBeforeInBlock(b);
  });
  for (Operation *user : gradUsers) {
    auto op = dyn_cast<linalg::LinalgOp>(user);
    if (!op || op->getBlock() != grad->getBlock()) {
      why = "the logits' gradient is read by '" +
            user->getName().getStringRef().str() +
            "', not by a linalg operation in this block";
      return false;
    }
    OpOperand *rowsOperand = nullptr;
    for (OpOperand *input : op.getDpsInputOperands()) {
      Value v = input->get();
      SmallVector<Operation *> ignored;
      if (throughRoundTrips(v, ignored) == gradient) {
        if (rowsOperand) {
          why = "an operation reads the logits' gradient twice";
          return false;
        }
        rowsOperand = input;
      }
    }
    if (!rowsOperand) {
      why = "the logits' gradient is an operation's init";
      return false;
    }
    FailureOr<RowUse> use = rowUse(op, *rowsOperand, why);
    if (failed(use))
      return false;
    g.users.push_back(op);
    g.userOperands.push_back(rowsOperand);
    g.userRows.push_back(*use);
  }
  return true;
}

/// Matches the group around `grad`; `why` says what stands in the way.
static std::optional<Group> matchGroup(CrossEntropyGradOp grad,
                                       std::string &why) {
  Group g;
  g.grad = grad;
  if (grad.getReduction() != Reduction::Sum) {
    why = "the loss is not a sum (run train-normalize-loss first)";
    return std::nullopt;
  }
  Value logits = grad.getLogits();
  SmallVector<Operation *> logitUsers;
  if (!usersThroughRoundTrips(logits, logitUsers, g.reshapes) ||
      logitUsers.size() != 2) {
    why = "the logits are read by more than the loss and its gradient";
    return std::nullopt;
  }
  for (Operation *user : logitUsers)
    if (auto loss = dyn_cast<CrossEntropyOp>(user))
      g.loss = loss;
  if (!g.loss || !llvm::is_contained(logitUsers, grad.getOperation()) ||
      g.loss.getLabels() != grad.getLabels() ||
      g.loss.getReduction() != Reduction::Sum ||
      g.loss.getIgnoreIndex() != grad.getIgnoreIndex() ||
      g.loss.getLogits() != logits) {
    why = "the logits are not read by a summed train.cross_entropy on the "
          "same labels";
    return std::nullopt;
  }
  if (g.loss.getCount() && !g.loss.getCount().use_empty()) {
    why = "the loss's count result is used (count the labels instead)";
    return std::nullopt;
  }
  if (grad->getBlock() != g.loss->getBlock()) {
    why = "the loss and its gradient are in different blocks";
    return std::nullopt;
  }
  Value produced = throughRoundTrips(logits, g.reshapes);
  g.head = produced.getDefiningOp<linalg::LinalgOp>();
  if (!g.head || g.head->getBlock() != grad->getBlock()) {
    why = "the logits are not computed by a linalg operation in this block";
    return std::nullopt;
  }
  if (!llvm::all_of(produced.getUsers(), [&](Operation *user) {
        return llvm::is_contained(g.reshapes, user) ||
               user == g.loss.getOperation() || user == grad.getOperation();
      })) {
    why = "the logits are read by more than the loss and its gradient";
    return std::nullopt;
  }
  FailureOr<RowUse> headRows =
      rowUse(g.head, *g.head.getDpsInitOperand(0), why);
  if (failed(headRows) || headRows->reduction) {
    if (succeeded(headRows))
      why = "the logits' producer sums over the rows";
    return std::nullopt;
  }
  g.headRows = *headRows;
  auto type = cast<RankedTensorType>(logits.getType());
  if (type.getRank() != 2 || !type.hasStaticShape()) {
    why = "the logits are not a static [N, V] tensor";
    return std::nullopt;
  }
  g.rows = type.getDimSize(0);
  if (!matchGradientUsers(g, why))
    return std::nullopt;
  return g;
}

/// The rows of a chunk: the largest divisor of `n` that is at most `limit`
/// and a multiple of 8 (the CPU's vector code tiles rows by 8; a chunk of
/// 63 rows ran its products on scalar code, twice as slow), or without a
/// such, the largest divisor at most `limit`.
static int64_t chunkRowsFor(int64_t n, int64_t limit) {
  for (int64_t r = std::min(n, limit) / 8 * 8; r >= 8; r -= 8)
    if (n % r == 0)
      return r;
  for (int64_t r = std::min(n, limit); r > 1; --r)
    if (n % r == 0)
      return r;
  return 1;
}

namespace {
struct GaChunkLossHeadPass
    : ga::impl::GaChunkLossHeadPassBase<GaChunkLossHeadPass> {
  using Base::Base;

  void runOnOperation() override {
    if (chunkRows <= 0) {
      getOperation()->emitError()
          << "ga-chunk-loss-head: chunk-rows must be positive, got "
          << static_cast<int64_t>(chunkRows);
      return signalPassFailure();
    }
    SmallVector<CrossEntropyGradOp> grads;
    getOperation()->walk([&](CrossEntropyGradOp op) { grads.push_back(op); });
    for (CrossEntropyGradOp grad : grads) {
      std::string why;
      std::optional<Group> group = matchGroup(grad, why);
      if (!group) {
        grad.emitWarning() << "ga-chunk-loss-head: not chunked: " << why;
        continue;
      }
      int64_t r = chunkRowsFor(group->rows, chunkRows);
      if (r == group->rows)
        continue; // one chunk: nothing to do
      if (failed(chunk(*group, r, why)))
        grad.emitWarning() << "ga-chunk-loss-head: not chunked: " << why;
    }
  }

  /// The operations of the block that must follow the loop: those that
  /// read a result of the group, transitively.
  static llvm::SetVector<Operation *>
  dependents(Block *block, const llvm::SmallPtrSetImpl<Operation *> &set) {
    llvm::SetVector<Operation *> after;
    for (Operation &op : *block) {
      if (set.contains(&op))
        continue;
      bool reads = false;
      op.walk([&](Operation *nested) {
        for (Value v : nested->getOperands()) {
          Operation *def = v.getDefiningOp();
          if (def && (set.contains(def) || after.contains(def)))
            reads = true;
        }
      });
      if (reads)
        after.insert(&op);
    }
    return after;
  }

  /// The operations of the group.
  static llvm::SmallPtrSet<Operation *, 16> opsOf(Group &g) {
    llvm::SmallPtrSet<Operation *, 16> set;
    set.insert(g.head);
    set.insert(g.loss);
    set.insert(g.grad);
    for (Operation *op : g.reshapes)
      set.insert(op);
    for (linalg::LinalgOp op : g.users)
      set.insert(op);
    return set;
  }

  /// The last operation of `block` that defines a value the group reads
  /// from outside it (null: none): the loop goes after it.
  static Operation *lastInput(const llvm::SmallPtrSetImpl<Operation *> &set,
                              Block *block) {
    Operation *last = nullptr;
    for (Operation *op : set)
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || set.contains(def))
          continue;
        def = block->findAncestorOpInBlock(*def);
        if (def && (!last || last->isBeforeInBlock(def)))
          last = def;
      }
    return last;
  }

  /// Whether the group can become a loop after `last`: the dependents of
  /// the group that come before `last` move after the loop, so none may
  /// feed the group and none may have side effects; after chunking, nothing
  /// but the loss and the users' results may be read outside the group.
  static LogicalResult
  checkChunkable(Group &g, const llvm::SmallPtrSetImpl<Operation *> &set,
                 Block *block, Operation *last,
                 const llvm::SetVector<Operation *> &after, std::string &why) {
    for (Operation *op : set)
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          if (after.contains(block->findAncestorOpInBlock(*def))) {
            why = "the loss's gradient needs a value computed from the loss";
            return failure();
          }
    for (Operation *op : after)
      if (last && op->isBeforeInBlock(last) && !isPure(op)) {
        why = "'" + op->getName().getStringRef().str() +
              "' reads the loss or a gradient, has side effects and comes "
              "before a value that the loss needs";
        return failure();
      }
    llvm::SmallPtrSet<Value, 8> replaced = {g.loss.getLoss()};
    for (linalg::LinalgOp user : g.users)
      replaced.insert(user->getResult(0));
    for (Operation *op : set)
      for (Value v : op->getResults())
        if (!replaced.contains(v) &&
            llvm::any_of(v.getUsers(), [&](Operation *user) {
              return !set.contains(user);
            })) {
          why = "a value of the group other than the loss and the "
                "gradients is read outside it";
          return failure();
        }
    return success();
  }

  /// Slices and copies of the group's operations on one chunk: rows
  /// [offset, offset + r), inside the loop's body.
  struct ChunkBody {
    OpBuilder &b;
    Location loc;
    Value offset;
    int64_t r;

    /// The offsets, sizes and strides of the chunk's rows of a tensor of
    /// `type`.
    struct Window {
      SmallVector<OpFoldResult> offsets, sizes, strides;
    };
    Window window(RankedTensorType type) const {
      Window w;
      w.offsets.assign(type.getRank(), b.getIndexAttr(0));
      w.offsets[0] = offset;
      w.strides.assign(type.getRank(), b.getIndexAttr(1));
      for (int64_t d : type.getShape())
        w.sizes.push_back(b.getIndexAttr(d));
      w.sizes[0] = b.getIndexAttr(r);
      return w;
    }
    /// The type of a chunk of `whole`: r rows.
    RankedTensorType chunkType(Value whole) const {
      auto type = cast<RankedTensorType>(whole.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[0] = r;
      return RankedTensorType::get(shape, type.getElementType());
    }
    /// The chunk's rows of `v` (sliced along dimension 0).
    Value rowsOf(Value v) const {
      Window w = window(cast<RankedTensorType>(v.getType()));
      return tensor::ExtractSliceOp::create(b, loc, chunkType(v), v, w.offsets,
                                            w.sizes, w.strides)
          .getResult();
    }
    /// A copy of `op` on the chunk: operands that walk the rows sliced,
    /// `rowsValue` in place of its rows operand (if any), its init `init`.
    Value onChunk(linalg::LinalgOp op, RowUse use, OpOperand *rowsOperand,
                  Value rowsValue, Value init) const {
      IRMapping mapping;
      for (OpOperand *input : op.getDpsInputOperands()) {
        if (input == rowsOperand) {
          mapping.map(input->get(), rowsValue);
          continue;
        }
        AffineMap map = op.getMatchingIndexingMap(input);
        bool walks =
            map.getNumResults() && map.getResult(0).isFunctionOfDim(use.dim);
        mapping.map(input->get(), walks ? rowsOf(input->get()) : input->get());
      }
      mapping.map(op.getDpsInits()[0], init);
      Operation *copy = b.clone(*op, mapping);
      copy->getResult(0).setType(init.getType());
      return copy->getResult(0);
    }
  };

  /// The loop's body: the head's logits of the chunk, its loss added to the
  /// running loss, its gradient, and each user's contribution (a reduction
  /// over the rows accumulated; otherwise the chunk's rows of the result
  /// inserted back, in place).
  static void emitChunk(Group &g, scf::ForOp loop, ChunkBody &chunk) {
    OpBuilder &inner = chunk.b;
    Location loc = chunk.loc;
    Value headInit = g.head.getDpsInits()[0];
    Value logits =
        chunk.onChunk(g.head, g.headRows, nullptr, Value(),
                      ga::zerosLike(inner, loc, chunk.chunkType(headInit)));
    Value labels = chunk.rowsOf(g.loss.getLabels());
    IRMapping ceMapping;
    ceMapping.map(g.loss.getLogits(), logits);
    ceMapping.map(g.loss.getLabels(), labels);
    auto loss = cast<CrossEntropyOp>(inner.clone(*g.loss, ceMapping));
    loss.getInitMutable().clear();
    Value running = loop.getRegionIterArgs()[0];
    // running += chunk's loss, into the running value (in place).
    AffineMap scalar = AffineMap::get(0, 0, inner.getContext());
    Value summed =
        linalg::GenericOp::create(
            inner, loc, TypeRange{running.getType()},
            ValueRange{loss->getResult(0)}, ValueRange{running},
            ArrayRef<AffineMap>{scalar, scalar},
            ArrayRef<utils::IteratorType>{},
            [](OpBuilder &b, Location loc, ValueRange args) {
              linalg::YieldOp::create(
                  b, loc,
                  ValueRange{arith::AddFOp::create(b, loc, args[1], args[0])});
            })
            .getResult(0);
    IRMapping gradMapping;
    gradMapping.map(g.grad.getLogits(), logits);
    gradMapping.map(g.grad.getLabels(), labels);
    Operation *gradient = inner.clone(*g.grad, gradMapping);
    gradient->getResult(0).setType(logits.getType());
    SmallVector<Value> yielded = {summed};
    for (auto [i, user] : llvm::enumerate(g.users)) {
      RowUse use = g.userRows[i];
      OpOperand *rowsOperand = g.userOperands[i];
      Value acc = loop.getRegionIterArgs()[1 + i];
      if (use.reduction) {
        yielded.push_back(
            chunk.onChunk(user, use, rowsOperand, gradient->getResult(0), acc));
        continue;
      }
      // The chunk's rows of the zero init, not written by earlier chunks:
      // computed into them, then inserted back (in place).
      Value part = chunk.onChunk(user, use, rowsOperand, gradient->getResult(0),
                                 chunk.rowsOf(acc));
      ChunkBody::Window w = chunk.window(cast<RankedTensorType>(acc.getType()));
      yielded.push_back(tensor::InsertSliceOp::create(inner, loc, part, acc,
                                                      w.offsets, w.sizes,
                                                      w.strides)
                            .getResult());
    }
    scf::YieldOp::create(inner, loc, yielded);
  }

  LogicalResult chunk(Group &g, int64_t r, std::string &why) {
    llvm::SmallPtrSet<Operation *, 16> set = opsOf(g);
    Block *block = g.grad->getBlock();
    Operation *last = lastInput(set, block);
    llvm::SetVector<Operation *> after = dependents(block, set);
    if (failed(checkChunkable(g, set, block, last, after, why)))
      return failure();

    // After `last`, every value the group reads dominates the loop over
    // the n / r chunks. A loss sum with an init (a micro-batch loop's
    // running loss) starts the chunks' running sum.
    Location loc = g.grad.getLoc();
    OpBuilder b(block,
                last ? std::next(Block::iterator(last)) : block->begin());
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value count = arith::ConstantIndexOp::create(b, loc, g.rows / r);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value lossInit = g.loss.getInit()
                         ? g.loss.getInit()
                         : ga::zerosLike(b, loc, g.loss.getLoss().getType());
    SmallVector<Value> inits = {lossInit};
    for (linalg::LinalgOp user : g.users)
      inits.push_back(user.getDpsInits()[0]);
    auto loop = scf::ForOp::create(b, loc, zero, count, one, inits);
    OpBuilder inner = OpBuilder::atBlockBegin(loop.getBody());
    Value offset =
        arith::MulIOp::create(inner, loc, loop.getInductionVar(),
                              arith::ConstantIndexOp::create(inner, loc, r));
    ChunkBody body{inner, loc, offset, r};
    emitChunk(g, loop, body);

    // The results, then the dependents after the loop, in their order.
    g.loss.getLoss().replaceAllUsesWith(loop.getResult(0));
    for (auto [i, user] : llvm::enumerate(g.users))
      user->getResult(0).replaceAllUsesWith(loop.getResult(1 + i));
    Operation *point = loop;
    for (Operation *op : after)
      if (op->isBeforeInBlock(loop)) {
        op->moveAfter(point);
        point = op;
      }
    // The group's operations are dead now (checked above): each round
    // erases those whose users are gone.
    SmallVector<Operation *> remaining(set.begin(), set.end());
    for (size_t before = 0; before != remaining.size();) {
      before = remaining.size();
      llvm::erase_if(remaining, [](Operation *op) {
        if (!op->use_empty())
          return false;
        op->erase();
        return true;
      });
    }
    assert(remaining.empty() && "the group's values are read after chunking");
    return success();
  }
};
} // namespace
