//===- RowGroups.cpp - Runs of loop nests over the same rows, one launch --===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The row groups of ga-gpu-fuse-parallel-loops (row-groups) and of the
// CUDA pipeline's gpu-row-fusion: each run of adjacent parallel loop nests
// of the host code (between them, allocations, deallocations and
// operations without memory effects) is partitioned into the fewest
// consecutive groups, of up to 16 nests, that run as one gpu.launch each.
// A group's rows are the extents of its nest of least rank; each nest runs
// over the rows alone or over the rows and its columns; every buffer that
// two nests touch and one writes is touched in both only in the
// iteration's own row. Each block runs up to block-size / lanes rows, each
// row on `lanes` threads, the nests in turn with a barrier between them:
// every iteration of every nest runs once with its own indices and body,
// and no two rows share an element that one writes, so the results are
// bitwise the same (docs/cuda.md, "Fusing parallel loops, in detail").
//
//===----------------------------------------------------------------------===//

#include "LoopFusion.h"
#include "Utils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;
using namespace ga::cuda::fusion;

namespace {

/// The upper bounds of `loop` when they are constants and its lower bounds
/// 0 and steps 1, as linalg's lowering makes them.
std::optional<SmallVector<int64_t>> staticExtents(scf::ParallelOp loop) {
  SmallVector<int64_t> extents;
  for (auto [lower, upper, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lower);
    std::optional<int64_t> u = getConstantIntValue(upper);
    std::optional<int64_t> s = getConstantIntValue(step);
    if (!l || !u || !s || *l != 0 || *s != 1 || *u <= 0)
      return std::nullopt;
    extents.push_back(*u);
  }
  return extents;
}

/// How a loop of a row group runs: which of its dimensions are the rows
/// (in the rows' order) and which, if any, its columns.
struct RowRoles {
  SmallVector<unsigned> rowDims;
  std::optional<unsigned> columnDim;
};

/// Where an access touches a row: the buffer (the root of the views that
/// keep the rows) and, for each row dimension, the position of its index
/// in that buffer.
struct RowPlace {
  Value base;
  SmallVector<unsigned> positions;
  bool operator==(const RowPlace &other) const {
    return base == other.base && positions == other.positions;
  }
};

/// Where `access`, in `loop` with `roles`, touches its iteration's row,
/// when it touches only elements of that row: each row dimension's
/// induction variable is an index, unscaled, through views that keep its
/// position whole (subviews of offset 0, stride 1 and the source's size
/// there) back to the buffer, in layouts whose elements do not overlap,
/// and a vector access runs along a position that is not a row's. Rows of
/// the buffer (the elements with given indices at those positions) are
/// disjoint, whatever the other indices are.
std::optional<RowPlace> rowPlace(const Access &access, scf::ParallelOp loop,
                                 const RowRoles &roles) {
  auto type = dyn_cast<MemRefType>(access.memref.getType());
  if (!type || !elementsDoNotOverlap(type))
    return std::nullopt;
  RowPlace place{access.memref, {}};
  for (unsigned dim : roles.rowDims) {
    auto position = llvm::find_if(access.indices, [&](Value index) {
      std::optional<std::pair<unsigned, int64_t>> d =
          scaledDimension(index, loop);
      return d && d->first == dim && d->second == 1;
    });
    if (position == access.indices.end())
      return std::nullopt;
    place.positions.push_back(position - access.indices.begin());
  }
  if (isa<VectorType>(access.type) &&
      llvm::is_contained(place.positions, access.indices.size() - 1))
    return std::nullopt;
  while (auto subview = place.base.getDefiningOp<memref::SubViewOp>()) {
    MemRefType source = subview.getSourceType();
    llvm::SmallBitVector dropped = subview.getDroppedDims();
    // The source's dimension of each of the view's.
    SmallVector<unsigned> sourceDims;
    for (unsigned d = 0; d < source.getRank(); ++d)
      if (!dropped.test(d))
        sourceDims.push_back(d);
    SmallVector<unsigned> positions;
    for (unsigned position : place.positions) {
      unsigned d = sourceDims[position];
      if (subview.getStaticOffsets()[d] != 0 ||
          subview.getStaticStrides()[d] != 1 ||
          ShapedType::isDynamic(source.getDimSize(d)) ||
          subview.getStaticSizes()[d] != source.getDimSize(d))
        break;
      positions.push_back(d);
    }
    if (positions.size() != place.positions.size() ||
        !elementsDoNotOverlap(source))
      break;
    place = {subview.getSource(), positions};
  }
  return place;
}

/// The roles of the dimensions of a loop of `extents` over rows of
/// `rows`: every dimension a row's, in order, or all but one (the columns:
/// the innermost such dimension that leaves the rows in order).
std::optional<RowRoles> rolesOver(ArrayRef<int64_t> extents,
                                  ArrayRef<int64_t> rows) {
  RowRoles roles;
  if (extents == rows) {
    roles.rowDims = llvm::to_vector(llvm::seq<unsigned>(0, rows.size()));
    return roles;
  }
  if (extents.size() != rows.size() + 1)
    return std::nullopt;
  for (unsigned c = extents.size(); c-- > 0;) {
    SmallVector<int64_t> rest(extents);
    rest.erase(rest.begin() + c);
    if (rest != rows)
      continue;
    for (unsigned d = 0; d < extents.size(); ++d)
      if (d != c)
        roles.rowDims.push_back(d);
    roles.columnDim = c;
    return roles;
  }
  return std::nullopt;
}

/// The shape of a row group: the rows' extents, and each loop's roles and
/// columns.
struct RowGroupShape {
  SmallVector<int64_t> rows;
  SmallVector<RowRoles> roles;
  SmallVector<std::optional<int64_t>> columns;
};

/// The most iterations a row's first thread runs one after the other for a
/// loop without columns: the product of the constant trip counts of the
/// sequential loops around its deepest operation (nothing for a trip count
/// that is not constant).
std::optional<int64_t> sequentialIterations(scf::ParallelOp loop) {
  int64_t most = 1;
  WalkResult result = loop.getBody()->walk([&](scf::ForOp inner) {
    int64_t iterations = 1;
    for (Operation *op = inner; op != loop; op = op->getParentOp()) {
      auto enclosing = dyn_cast<scf::ForOp>(op);
      if (!enclosing)
        continue;
      std::optional<APInt> count = enclosing.getStaticTripCount();
      if (!count)
        return WalkResult::interrupt();
      iterations *= count->getSExtValue();
    }
    most = std::max(most, iterations);
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return std::nullopt;
  return most;
}

/// The most iterations of a loop without columns in a row's first thread
/// where the lanes run on threadIdx.x (RowGroupJoiner::layout): a warp's
/// partial sums (32), a short row (64).
constexpr int64_t kMaxFirstThreadIterations = 64;

/// What the row groups read of a loop: its extents (staticExtents) and its
/// accesses (accessesOf), taken once per loop of a run.
struct LoopFacts {
  SmallVector<int64_t> extents;
  SmallVector<Access> accesses;
};

std::optional<LoopFacts> loopFacts(scf::ParallelOp loop) {
  std::optional<SmallVector<int64_t>> extents = staticExtents(loop);
  std::optional<SmallVector<Access>> accesses = accessesOf(loop);
  if (!extents || !accesses)
    return std::nullopt;
  return LoopFacts{std::move(*extents), std::move(*accesses)};
}

/// The shape of `group` when its loops may run as one kernel, one row at a
/// time in each group of threads, with a barrier between two loops: static
/// extents; rows whose extents are those of a loop of the least rank
/// (or those but the innermost), each loop over the rows alone or over the
/// rows and one more dimension, some loop over one more; every buffer two
/// loops touch and one of them writes touched in both only at the
/// iteration's row, at the same positions of the same buffer (rowPlace).
std::optional<RowGroupShape>
rowGroupShape(ArrayRef<scf::ParallelOp> group,
              ArrayRef<std::optional<LoopFacts>> facts) {
  if (llvm::any_of(facts, [](const auto &f) { return !f; }))
    return std::nullopt;
  SmallVector<ArrayRef<int64_t>> extents;
  for (const std::optional<LoopFacts> &f : facts)
    extents.push_back(f->extents);
  auto accesses = [&](size_t i) -> ArrayRef<Access> {
    return facts[i]->accesses;
  };
  ArrayRef<int64_t> least =
      *llvm::min_element(extents, [](ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
        return a.size() < b.size();
      });
  SmallVector<ArrayRef<int64_t>> candidates = {least};
  if (least.size() > 1)
    candidates.push_back(least.drop_back());
  for (ArrayRef<int64_t> rows : candidates) {
    RowGroupShape shape;
    shape.rows.assign(rows.begin(), rows.end());
    for (ArrayRef<int64_t> e : extents) {
      std::optional<RowRoles> roles = rolesOver(e, rows);
      if (!roles)
        break;
      shape.columns.push_back(roles->columnDim
                                  ? std::optional(e[*roles->columnDim])
                                  : std::nullopt);
      shape.roles.push_back(std::move(*roles));
    }
    // Without columns, the rows are single elements: the first step's.
    if (shape.roles.size() != group.size() ||
        llvm::none_of(shape.columns, [](auto c) { return c.has_value(); }))
      continue;
    auto ownRows = [&]() {
      for (size_t i = 0; i < group.size(); ++i)
        for (size_t j = i + 1; j < group.size(); ++j)
          for (const Access &x : accesses(i))
            for (const Access &y : accesses(j)) {
              if ((!x.write && !y.write) ||
                  !mayAlias(ga::cuda::viewSource(x.memref),
                            ga::cuda::viewSource(y.memref)))
                continue;
              std::optional<RowPlace> px =
                  rowPlace(x, group[i], shape.roles[i]);
              std::optional<RowPlace> py =
                  rowPlace(y, group[j], shape.roles[j]);
              if (!px || !py || !(*px == *py))
                return false;
            }
      return true;
    };
    if (ownRows())
      return shape;
  }
  return std::nullopt;
}

/// Threads a GPU keeps resident at once, in round figures (an H100: 132
/// multiprocessors of 2,048).
constexpr int64_t kResidentThreads = 1 << 16;

/// The most loops one row group takes (the partition's search is
/// quadratic in it).
constexpr size_t kMaxGroup = 16;

/// Row groups: each run of loops partitioned into the fewest groups that
/// rowGroupShape accepts, where some loop has columns and the rows keep a
/// GPU busy, each group one kernel.
struct RowGroupJoiner : RunJoiner {
  explicit RowGroupJoiner(int64_t blockSize) : blockSize(blockSize) {}
  int64_t blockSize;
  /// The loops of the run, in order.
  SmallVector<scf::ParallelOp> run;

  /// How a row group runs: `rowsPer` rows per block, `lanes` threads per
  /// row.
  struct Layout {
    int64_t rows, lanes, rowsPer;
    /// Rows on threadIdx.x and lanes on threadIdx.y, where the columns are
    /// outer dimensions (neighbouring threads then touch neighbouring
    /// elements of a row-major buffer), else lanes on x and rows on y.
    bool rowsOnX;
  };

  /// How `shape` runs `group`, or nothing when no loop has columns or the
  /// rows would leave a GPU idle.
  std::optional<Layout> layout(ArrayRef<scf::ParallelOp> group,
                               const RowGroupShape &shape) const {
    int64_t maxColumns = 0;
    for (std::optional<int64_t> columns : shape.columns)
      maxColumns = std::max<int64_t>(maxColumns, columns.value_or(0));
    if (maxColumns == 0)
      return std::nullopt;
    int64_t rows = 1;
    for (int64_t extent : shape.rows)
      rows *= extent;
    int64_t lanes = std::min<int64_t>(llvm::PowerOf2Ceil(maxColumns), 32);
    while (lanes > blockSize)
      lanes /= 2;
    // The nests' own kernels would run a thread per element: a group of
    // fewer threads than a GPU holds at once runs each thread's columns one
    // after the other, at most 4 each (so 8 rows of 256 columns stay
    // apart; 128 rows of 64 columns, where the launch costs more than the
    // columns, do not).
    if (rows * lanes < kResidentThreads && maxColumns > 4 * lanes)
      return std::nullopt;
    int64_t rowsPer = 1;
    while (rowsPer * 2 * lanes <= blockSize && rows % (rowsPer * 2) == 0)
      rowsPer *= 2;
    if (rows / rowsPer > (int64_t(1) << 31) - 1)
      return std::nullopt;
    bool rowsOnX = true;
    for (auto [roles, columns] : llvm::zip(shape.roles, shape.columns))
      if (columns && *roles.columnDim > roles.rowDims.back())
        rowsOnX = false;
    // With lanes on x, a loop without columns runs in one thread of each
    // row's lanes (of each warp, at 32 lanes), where its own kernel runs a
    // row in every thread of a warp: only short ones (a row's partial sums
    // from lanes) join. With rows on x, the rows' first threads are
    // neighbours.
    if (!rowsOnX)
      for (auto [loop, columns] : llvm::zip(group, shape.columns)) {
        if (columns)
          continue;
        std::optional<int64_t> iterations = sequentialIterations(loop);
        if (!iterations || *iterations > kMaxFirstThreadIterations)
          return std::nullopt;
      }
    return Layout{rows, lanes, rowsPer, rowsOnX};
  }

  void start(scf::ParallelOp loop) override { run.assign({loop}); }
  bool extend(scf::ParallelOp loop) override {
    run.push_back(loop);
    return true;
  }
  /// The run in the fewest kernels: its partition into consecutive groups
  /// (of at most kMaxGroup loops) that run as one kernel each, or alone.
  void finish() override {
    size_t n = run.size();
    // fewest[i]: kernels for the first i loops; from[i]: where the last
    // group of those starts.
    SmallVector<size_t> fewest(n + 1, 0), from(n + 1, 0);
    SmallVector<std::optional<std::pair<RowGroupShape, Layout>>> plans(n + 1);
    SmallVector<std::optional<LoopFacts>> facts;
    for (scf::ParallelOp loop : run)
      facts.push_back(loopFacts(loop));
    for (size_t i = 1; i <= n; ++i) {
      fewest[i] = fewest[i - 1] + 1;
      from[i] = i - 1;
      for (size_t j = i >= kMaxGroup ? i - kMaxGroup : 0; j + 1 < i; ++j) {
        if (fewest[j] + 1 >= fewest[i])
          continue;
        ArrayRef<scf::ParallelOp> group(run.begin() + j, run.begin() + i);
        if (!freesMayMoveAfter(group.front(), group.back()))
          continue;
        std::optional<RowGroupShape> shape =
            rowGroupShape(group, ArrayRef(facts).slice(j, i - j));
        std::optional<Layout> l = shape ? layout(group, *shape) : std::nullopt;
        if (!l)
          continue;
        fewest[i] = fewest[j] + 1;
        from[i] = j;
        plans[i] = std::make_pair(std::move(*shape), *l);
      }
    }
    for (size_t i = n; i > 0; i = from[i])
      if (from[i] + 1 < i)
        build(ArrayRef<scf::ParallelOp>(run.begin() + from[i], run.begin() + i),
              plans[i]->first, plans[i]->second);
    run.clear();
  }

  /// One launch in place of the group's loops: each block runs `rowsPer`
  /// rows on threadIdx.y, each row on `lanes` threads (threadIdx.x); each
  /// loop in turn, its columns strided over the row's threads, a loop
  /// without columns in the row's first thread, a barrier between two
  /// loops. Every iteration of every loop runs once, with its own indices
  /// and its own body.
  void build(ArrayRef<scf::ParallelOp> group, const RowGroupShape &shape,
             Layout layout) {
    auto [rows, lanes, rowsPer, rowsOnX] = layout;
    scf::ParallelOp last = group.back();
    SmallVector<Location> locs;
    for (scf::ParallelOp loop : group)
      locs.push_back(loop.getLoc());
    OpBuilder b(last);
    Location loc = b.getFusedLoc(locs);
    // One constant of each value per block.
    DenseMap<std::pair<Block *, int64_t>, Value> constants;
    auto constant = [&](int64_t v) -> Value {
      Value &c = constants[{b.getInsertionBlock(), v}];
      if (!c)
        c = arith::ConstantIndexOp::create(b, loc, v);
      return c;
    };
    Value one = constant(1);
    Value threadsX = constant(rowsOnX ? rowsPer : lanes);
    Value threadsY = constant(rowsOnX ? lanes : rowsPer);
    auto launch = gpu::LaunchOp::create(b, loc, constant(rows / rowsPer), one,
                                        one, threadsX, threadsY, one);
    b.setInsertionPointToEnd(&launch.getBody().front());
    gpu::KernelDim3 threads = launch.getThreadIds();
    Value lane = rowsOnX ? threads.y : threads.x;
    Value row = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                              constant(rowsPer)),
        rowsOnX ? threads.x : threads.y);
    // The row's indices, innermost last.
    SmallVector<Value> rowIndices(shape.rows.size());
    for (size_t k = shape.rows.size(); k-- > 1;) {
      Value extent = constant(shape.rows[k]);
      rowIndices[k] = arith::RemUIOp::create(b, loc, row, extent);
      row = arith::DivUIOp::create(b, loc, row, extent);
    }
    rowIndices[0] = row;
    Value firstLane = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                            lane, constant(0));
    for (auto [i, member] : llvm::enumerate(group)) {
      scf::ParallelOp loop = member;
      if (i > 0)
        gpu::BarrierOp::create(b, loc);
      const RowRoles &roles = shape.roles[i];
      IRMapping map;
      for (auto [dim, index] : llvm::zip(roles.rowDims, rowIndices))
        map.map(loop.getInductionVars()[dim], index);
      OpBuilder::InsertionGuard guard(b);
      if (std::optional<int64_t> columns = shape.columns[i]) {
        auto columnLoop = scf::ForOp::create(
            b, loop.getLoc(), lane, constant(*columns), constant(lanes));
        map.map(loop.getInductionVars()[*roles.columnDim],
                columnLoop.getInductionVar());
        b.setInsertionPoint(columnLoop.getBody()->getTerminator());
      } else {
        auto first = scf::IfOp::create(b, loop.getLoc(), firstLane,
                                       /*withElseRegion=*/false);
        b.setInsertionPoint(first.thenBlock()->getTerminator());
      }
      for (Operation &op : loop.getBody()->without_terminator())
        b.clone(op, map);
    }
    gpu::TerminatorOp::create(b, loc);
    // Buffers freed between the loops are freed after the launch
    // (freesMayMoveAfter: the device's peak is the same).
    moveFreesAfter(group.front(), last, launch);
    for (scf::ParallelOp loop : group)
      loop.erase();
  }
};

} // namespace

void ga::cuda::fuseRowGroups(Region &region, int64_t blockSize) {
  RowGroupJoiner joiner(blockSize);
  joinAdjacentLoops(region, joiner);
}
