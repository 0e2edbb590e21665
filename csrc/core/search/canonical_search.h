// CanonicalSearch: one depth-first search over the canonical packings of a
// UnitProblem (unit_problem.h) at a fixed capacity in units, with one static
// preorder, in steps of nodes. exact_search.h says what a canonical packing
// is and why the search, with its pruning, is complete: the dominance rule,
// the sections' unallocated floor, the symmetry of identical tensors, and the
// decomposition into independent parts. Its answers are exact: kFound comes
// with a packing whose every item lies within the capacity, clear of the
// items alive with it (lifetimes inclusive [start, end]) and of the ranges
// that obstacles forbid it; kNotFound means no packing fits; kAborted (a
// node limit, should_stop, or a search that gave up: below) says nothing.
//
// Resumable: a search stopped by its node limit or should_stop keeps its
// stack, and the next Run with a larger limit goes on where it stopped. So
// the restarts of exact_search.cc, which raise each member's limit round
// after round, pay each node once: a run to n nodes in several steps visits
// exactly the nodes, in the same order, that one run to n visits.
//
// Bounded memory: the undo logs, the only memory that grows with the depth,
// are capped at `max_undo_bytes`. Past it, the oldest entries are dropped
// (those of the placements nearest the root) and the search goes on as a
// dive: it may still backtrack among the placements whose entries it kept,
// and gives up (kAborted, for good) only when it must undo a placement whose
// entries it dropped. A search that needs no backtracking that deep (pangu's
// packing at its bound needs none at all) still answers.
//
// Deterministic: the same problem, capacity, preorder and sequence of node
// limits give the same answers and node counts, whatever the thread, unless
// should_stop ends a step; and where a step stops does not change what the
// search visits after it. One search is single-threaded; exact_search.cc
// runs one per preorder, in threads, on the same read-only UnitProblem.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/search/exact_search.h"
#include "core/search/unit_problem.h"

namespace cadence_memplan {
namespace detail {

enum class Outcome { kFound, kNotFound, kAborted };

// One depth-first search over canonical packings (exact_search.h) at a fixed
// capacity, with one static preorder, run in steps up to node limits.
class CanonicalSearch {
 public:
  // `priority`, when given (one per item, larger first, outliving the
  // search), takes the place of the preorder's first key: SqueakyDives
  // (squeaky_dives.h) learns it.
  CanonicalSearch(const UnitProblem& problem, Unit capacity, const std::string& preorder,
                  int64_t max_undo_bytes = kMaxUndoBytes,
                  const std::vector<double>* priority = nullptr)
      : p_(problem),
        capacity_(capacity),
        preorder_(preorder),
        max_undo_bytes_(max_undo_bytes),
        priority_(priority) {}

  // Searches on until an answer, `node_limit` nodes in all (counted since
  // the first call), should_stop (polled every 256 nodes) or giving up: kFound
  // when a packing fits (its units in solution()), kNotFound when none does,
  // else kAborted. After an answer or giving up, every call returns the same
  // without searching; after kAborted otherwise, a call with a larger limit
  // (or should_stop false) goes on.
  Outcome Run(int64_t node_limit, const std::function<bool()>& should_stop);

  // Units per item, after kFound.
  const std::vector<Unit>& solution() const { return solution_; }
  // Nodes visited since construction.
  int64_t nodes() const { return nodes_; }
  // Answered (kFound or kNotFound) or gave up: no call searches again.
  bool finished() const { return state_ == State::kFinished; }
  // Gave up: it had to undo a placement whose undo entries it had dropped.
  bool gave_up() const { return finished() && outcome_ == Outcome::kAborted; }

 private:
  struct Part {
    std::vector<ItemIndex> items;  // In preorder: rank = position.
    std::vector<int32_t> twin;     // Per rank: the rank of an identical item before it, or -1.
    SectionIndex lo = 0, hi = 0;   // Its sections.
    // The unplaced ranks, linked in rank order from and to rank items.size();
    // placements unlink and removals relink them in reverse order.
    std::vector<int32_t> next, prev;
    void Unlink(int32_t r) {
      next[prev[r]] = next[r];
      prev[next[r]] = prev[r];
    }
    void Relink(int32_t r) {
      next[prev[r]] = r;
      prev[next[r]] = r;
    }
  };
  struct Candidate {
    Unit offset;
    int32_t rank;
  };
  static bool Before(const Candidate& a, const Candidate& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.rank < b.rank;
  }
  struct Mark {
    size_t lows = 0, min_offsets = 0;
  };
  // The search is a loop over an explicit stack, not a recursion: its depth
  // is the number of tensors placed, more than a thread's stack may hold.
  struct Frame {
    bool sides = false;  // Solves independent parts in turn, or searches one.
    // A search: its part, where the last placement went, the highest
    // offset a candidate may take and the last candidate tried (the next is
    // the lowest after it: NextCandidate), the child's placement. No list of
    // candidates is kept: a frame costs the same at every depth, and the
    // stack of a search as deep as the tensors are many stays small.
    size_t part = 0;
    Unit last_offset = 0;
    int32_t last_rank = -1;
    Unit highest = 0;
    Candidate tried{kNoUnit, -1};
    bool started = false;
    ItemIndex placed = kNoItem;
    int32_t placed_rank = -1;
    Mark mark;
    // Sides: the bounds of each side's sections, its items, the next side.
    std::vector<SectionIndex> bounds;
    std::vector<std::vector<ItemIndex>> side_items;
    size_t next_side = 0;
  };

  enum class State { kNew, kRunning, kFinished };

  // Sets up the state for the empty packing and pushes the root frame;
  // kNotFound when some item or section cannot fit at all.
  Outcome Start();

  // Runs the frames on stack_ until an answer, the limit or should_stop
  // (kAborted with the stack kept, to resume), or giving up.
  Outcome Search(int64_t node_limit, const std::function<bool()>& should_stop);
  // Search's steps on the frame on top of the stack. What the loop does
  // next: go on with the frame, take the stack's new top, or stop (kAborted).
  enum class Next { kGoOn, kLoop, kStop };
  // A frame of sides: the answer of the side just solved, then the next.
  void SolveSides(Frame& frame);
  // Pops the frame with `answer` for the frame below it.
  void Answer(Outcome answer) {
    result_ = answer;
    stack_.pop_back();
    returned_ = true;
  }
  // A search frame's node: counted, or the search pauses before it.
  Next StartNode(Frame& frame, int64_t node_limit, const std::function<bool()>& should_stop);
  // A child answered: its placement undone, or the search gives up.
  Next TakeAnswer(Frame& frame);
  // The next candidate that passes the symmetry rule and the checks, and
  // its child pushed; kNotFound when none does.
  void TryCandidates(Frame& frame);

  // The undo logs passed max_undo_bytes_: drops their oldest half.
  void DropOldestUndo();

  // Whether Remove can undo the placement made at `mark`.
  bool Undoable(const Mark& mark) const {
    return mark.lows >= lows_dropped_ && mark.min_offsets >= min_offsets_dropped_;
  }

  // A part in the search's preorder, with the totals of now.
  Part MakePart(std::vector<ItemIndex> items, SectionIndex lo, SectionIndex hi) const;

  // The candidates of a search frame, which SolveSides takes in (offset,
  // rank) order: canonical (not before the last placement), not dominated
  // (below the lowest top of an unplaced item), and low enough: every
  // unplaced item goes at or above the offset, so the offset plus any
  // section's total must fit (those alive with the candidate go above its
  // top, but it leaves their total). Sets the frame's highest offset; false
  // when the part has no unplaced item.
  bool StartCandidates(Frame* frame) const;

  // The frame's next candidate after frame->tried, in (offset, rank) order,
  // or false. The state is the frame's own again when it asks (a child's
  // placements are undone first), so the candidates are those of its start.
  bool NextCandidate(Frame* frame, Candidate* next) const;

  // Item i was just placed and left no unplaced tensor across some section
  // boundaries of the part: each side is solved on its own.
  void SplitSides(const Part& part, ItemIndex i, Frame* sides) const;

  // Puts item i at k and updates what depends on it; returns whether some
  // section boundary has no unplaced item across it any more.
  bool Place(ItemIndex i, Unit k);

  // Lists the sections whose lowest item j moves (placed or risen), once.
  void NoteLowestMoved(ItemIndex j);

  // Finds the lowest item of every changed section: one by one, or, along a
  // long run of adjacent sections, by one sweep that adds the items as their
  // first section comes and drops them once past their last.
  void RefreshLows();

  // low_[s]: the lowest minimum offset of an unplaced item of section s.
  void FindLowest(SectionIndex s);

  void SweepLowest(SectionIndex first, SectionIndex last);

  void SetLowest(SectionIndex s, Unit lowest, ItemIndex which);

  // Item j is now the lowest of section s. lowest_in_[j] lists at least
  // every such section; stale entries go when the list doubles.
  void BecomeLowest(ItemIndex j, SectionIndex s);

  void Remove(ItemIndex i, const Mark& mark);

  // Section s with every unplaced item at or above max(x, its lowest).
  bool SectionFits(SectionIndex s, Unit x) const;

  // After the placement at x (CollectCandidates checked x against every
  // section's total): the sections whose lowest item rose, and with
  // obstacles every section, since what they cover above x depends on x.
  bool FitsAfter(const Part& part, Unit x) const;

  // Below this many adjacent sections, finding each one's lowest item by
  // scanning its members costs less than a sweep.
  static constexpr size_t kSweepRun = 8;

  const UnitProblem& p_;
  const Unit capacity_;
  const std::string preorder_;
  const int64_t max_undo_bytes_;
  const std::vector<double>* const priority_;
  int64_t nodes_ = 0;
  State state_ = State::kNew;
  Outcome outcome_ = Outcome::kAborted;  // Once finished.
  // The frames of the search, root first; `returned` and `result` carry the
  // answer of the frame just popped to the one below it.
  std::vector<Frame> stack_;
  bool returned_ = false;
  Outcome result_ = Outcome::kNotFound;

  std::vector<Unit> offset_;      // Per item: placed at, or kNoUnit.
  std::vector<Unit> solution_;    // Per item: the last placement (a leaf's, after kFound).
  std::vector<Unit> min_offset_;  // Per item: where it would go now.
  std::vector<int32_t> argmin_sections_;  // Per item: how many sections it is lowest in,
  std::vector<std::vector<SectionIndex>> lowest_in_;  // and which (BecomeLowest).
  std::vector<Unit> total_;               // Per section: units of its unplaced items,
  MaxTree totals_{{}};                    // and the same for ranges of sections.
  std::vector<Unit> low_;                 // Per section: its lowest minimum offset,
  std::vector<ItemIndex> low_item_;       // of this unplaced item (kNoItem: none).
  std::vector<int32_t> cuts_;             // Per boundary s|s+1: unplaced items across it.
  // The undo logs, per placement (frame.mark): the sections whose lowest
  // item was replaced, with that item (its minimum offset, restored first,
  // is the section's old low: low_[s] == min_offset_[low_item_[s]] always),
  // and the items whose minimum offset rose, with the old value. They are
  // the search's only memory that grows with its depth: 8 bytes per
  // section and 12 per item, capped at max_undo_bytes_ (above). Marks count
  // entries since the start: entry m of a log is at m - (entries dropped).
  struct LowChange {
    SectionIndex section;
    ItemIndex item;
  };
  std::vector<LowChange> low_log_;
  std::vector<ItemIndex> min_offset_log_;        // The items,
  std::vector<Unit> min_offset_log_values_;      // and their old minimum offsets.
  size_t lows_dropped_ = 0, min_offsets_dropped_ = 0;  // The oldest entries, dropped.
  int64_t UndoBytes() const {
    return static_cast<int64_t>(low_log_.size() * sizeof(LowChange) +
                                min_offset_log_.size() * (sizeof(ItemIndex) + sizeof(Unit)));
  }
  std::vector<SectionIndex> changed_;  // By the last Place: their lowest moved.
  std::vector<uint8_t> flagged_;       // Per section, while RefreshLows sorts them.
  std::vector<std::pair<Unit, ItemIndex>> heap_;    // SweepLowest's.
  std::vector<Part> parts_;                         // Of the frames on the stack.
};

}  // namespace detail
}  // namespace cadence_memplan
