//===- Segments.h - Checkpointed segments of a chain of units ---*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The model train-plan-remat searches on: a step's forward pass cut into a
// chain of units (each ends where exactly one activation is alive), and a
// plan as a sequence of pieces, each a unit left saved or a segment of
// consecutive units checkpointed as one. A saved unit keeps its saved
// values and its boundary until its backward pass; a checkpointed segment
// keeps only its last boundary and, in its backward pass, recomputes all
// its units' values at once. In the backward pass of a piece, the pieces
// before it hold what they keep, the piece holds its values, and the
// adjoint of its boundary is alive; after the forward pass, everything
// kept plus the loss's values is alive. While a unit runs (forward, or
// recomputed in its segment's backward pass), what the pieces before it
// keep, the values of the units before it in its piece and its own
// temporaries are alive. The model's peak is the largest of
// these; a step's exact peak differs by about a constant (parameters,
// gradients, arguments, the adjoints' temporaries), which the pass
// measures with the exact memory model.
//
// Unlike Chain.h (Revolve: states reloaded and steps advanced many times),
// a checkpointed segment is recomputed once, in one piece, as
// train.checkpoint does; units may differ in cost and bytes, and be marked
// to be saved or recomputed. No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef GA_REMAT_SEGMENTS_H
#define GA_REMAT_SEGMENTS_H

#include <cstdint>
#include <optional>
#include <vector>

namespace ga::remat {

/// One unit of the chain.
struct ChainUnit {
  /// The forward work of the unit (what recomputing it costs).
  double cost = 0;
  /// The bytes of its boundary (the activation alive after it).
  int64_t boundaryBytes = 0;
  /// The bytes of the values defined in the unit that its adjoints read
  /// (besides the boundary): what a saved unit keeps for the backward pass
  /// and a checkpointed one recomputes.
  int64_t savedBytes = 0;
  /// The bytes of the largest value the unit defines: its adjoint and the
  /// adjoint of an operand are alive at once in the unit's backward pass.
  int64_t largestBytes = 0;
  /// What the unit's backward pass holds besides the values of its piece
  /// and what the pieces before it keep (the adjoints, their temporaries,
  /// the gradients made so far), when measured on a compiled step; -1: not
  /// measured, twice largestBytes.
  int64_t adjointBytes = -1;
  /// What the backward pass holds, when it reaches the unit, beyond what
  /// the forward pass held besides the kept values (the gradients of the
  /// units after it, the adjoint of its boundary), when measured: a
  /// checkpointed segment ending at this unit recomputes its units with
  /// these bytes alive too.
  int64_t liftBytes = 0;
  /// The most bytes of the buffers the unit makes alive at once while it
  /// runs (its saved values and boundary among them, each temporary from
  /// the operation that makes it to its last reader): with the values of
  /// the pieces before it, the peak of its forward pass and, in a
  /// checkpointed segment, of its recomputation. 0: not modelled.
  int64_t transientBytes = 0;
  bool mustSave = false;
  bool mustRecompute = false;

  /// The bytes alive in the unit's backward pass besides the values of its
  /// piece and what the pieces before it keep.
  int64_t adjoints() const {
    return adjointBytes >= 0 ? adjointBytes : 2 * largestBytes;
  }
};

/// Consecutive units [first, last] checkpointed as one, or a unit left
/// saved.
struct Segment {
  unsigned first = 0, last = 0;
  bool checkpointed = true;
  bool operator==(const Segment &other) const {
    return first == other.first && last == other.last &&
           checkpointed == other.checkpointed;
  }
};

/// A plan: pieces covering the units in order.
using SegmentPlan = std::vector<Segment>;

class SegmentChain {
public:
  /// `tailBytes`: the bytes of the values the loss (what follows the last
  /// unit) defines.
  SegmentChain(std::vector<ChainUnit> units, int64_t tailBytes)
      : units(std::move(units)), tailBytes(tailBytes) {}

  /// The model's peak of `plan`.
  int64_t peakOf(const SegmentPlan &plan) const;
  /// The forward work `plan` recomputes.
  double costOf(const SegmentPlan &plan) const;

  /// The plan of least recomputation whose model peak is at most `limit`
  /// (units marked "save" saved, units marked "recompute" checkpointed), or
  /// nothing. A dynamic program over the units: at each position, the
  /// plans of the prefix that are not dominated in (bytes kept, cost), at
  /// most 4,096 of them.
  std::optional<SegmentPlan> cheapestWithin(int64_t limit) const;

  /// The plan of the smallest model peak (the least recomputation among
  /// those): a bisection on the limit of cheapestWithin. Empty when no
  /// plan exists (a unit marked both ways).
  SegmentPlan smallest() const;

private:
  int64_t valuesOf(unsigned first, unsigned last) const;
  /// What the piece [first, last] keeps through the forward pass.
  int64_t kept(unsigned first, unsigned last, bool checkpointed) const;
  /// The peak of the backward pass of the piece, with `before` bytes kept
  /// by the pieces before it.
  int64_t backwardPeak(int64_t before, unsigned first, unsigned last,
                       bool checkpointed) const;

  std::vector<ChainUnit> units;
  int64_t tailBytes;
};

} // namespace ga::remat

#endif // GA_REMAT_SEGMENTS_H
