// Early-return helpers for absl::Status and absl::StatusOr, used across the
// project.
//
// Example:
//   absl::StatusOr<Tensor> Scaled(const Tensor& x, double factor) {
//     RETURN_IF_ERROR(CheckFinite(factor));
//     ASSIGN_OR_RETURN(Tensor y, Tensor::Create(x.dtype(), x.shape()));
//     ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel, MakeScale(factor));
//     RETURN_IF_ERROR(kernel->Run(x, y));
//     return y;
//   }
//
// Both evaluate their expression once. The status returned is the one the
// expression produced, unchanged (code, message and payloads); add context
// by hand where the caller needs it, e.g.
//   if (!s.ok()) return absl::Status(s.code(), absl::StrCat("loading ", path,
//                                                        ": ", s.message()));
#ifndef DEVICES_STATUS_MACROS_H_
#define DEVICES_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns the absl::Status of the expression from the calling function unless
// it is OK. The expression may contain commas.
#define RETURN_IF_ERROR(...)                                  \
  do {                                                        \
    const absl::Status distsim_status_macro_ = (__VA_ARGS__); \
    if (!distsim_status_macro_.ok()) {                        \
      return distsim_status_macro_;                           \
    }                                                         \
  } while (false)

#define DISTSIM_STATUS_MACRO_CONCAT_INNER_(a, b) a##b
#define DISTSIM_STATUS_MACRO_CONCAT_(a, b) \
  DISTSIM_STATUS_MACRO_CONCAT_INNER_(a, b)

// Evaluates the expression (an absl::StatusOr<T>); returns its status from
// the calling function unless it is OK, else moves its value into `lhs`: a
// declaration (`Tensor y`, `const auto& y`) or an existing variable. `lhs`
// must not contain a comma (use a type alias or `auto`); the expression may.
// Expands to more than one statement: write it as a statement of its own,
// not as the body of an unbraced `if`.
#define ASSIGN_OR_RETURN(lhs, ...)                                          \
  DISTSIM_ASSIGN_OR_RETURN_IMPL_(                                           \
      DISTSIM_STATUS_MACRO_CONCAT_(distsim_statusor_macro_, __LINE__), lhs, \
      __VA_ARGS__)

#define DISTSIM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, ...) \
  auto statusor = (__VA_ARGS__);                           \
  if (!statusor.ok()) {                                    \
    return std::move(statusor).status();                   \
  }                                                        \
  lhs = *std::move(statusor)

#endif  // DEVICES_STATUS_MACROS_H_
