// Reorders each rank's program of a Schedule so that the executor's
// in-order issue (executor.h) does not stall on steps that wait while later,
// independent steps could already run: the double binary tree's two trees,
// for instance, where a rank interior in one tree and a leaf in the other
// would otherwise hold its leaf sends behind its interior receives.
//
// The pass is list scheduling on a simple model: every step is issued as
// soon as its dependencies are done; a message starts once both its send and
// its receive are issued and the sender's send port and the receiver's
// receive port are free (one message at a time per port, first come first
// served), and takes 1 + count time units; local steps take none. Each
// rank's steps are then sorted by the time the model starts them (a
// message's transfer start, a local step's issue), ties in the original
// order.
//
// Guarantees:
//  * The new order is a topological order of every rank's dependencies, so
//    each rank reads, reduces and writes every range in the same order as
//    before: results are bit-identical.
//  * Tags, peers, ranges and buffer sizes are unchanged (messages match by
//    tag); dependency indices are renumbered to the new positions.
//  * Deadlock freedom under in-order issue: a step waits only for steps
//    that the model finishes no later than its own start, and a message
//    finishes strictly after both its sides start, so a chain of waits
//    strictly decreases in model time and cannot close into a cycle.
//  * A schedule the model cannot complete (unmatched messages, a cycle) is
//    returned unchanged.
//
// Example:
//   Schedule s = std::move(builder).Finish();
//   s = OrderForInOrderIssue(std::move(s));
#ifndef DISTRIBUTE_COLLECTIVE_ISSUE_ORDER_H_
#define DISTRIBUTE_COLLECTIVE_ISSUE_ORDER_H_

#include "distribute/collective/schedule.h"

namespace distribute {
namespace collective {

// The schedule with every rank's steps in model start order (see above).
Schedule OrderForInOrderIssue(Schedule schedule);

}  // namespace collective
}  // namespace distribute

#endif  // DISTRIBUTE_COLLECTIVE_ISSUE_ORDER_H_
